"""Peers and limits for `bench engine`: llama.cpp on the same GGUF, memory bandwidth.

llama.cpp (llama-cpp-python) is optional: `make bench-peers` installs it (it compiles
for ~4 min). Without it the benchmark says so and how to get it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

HOW_TO_GET_LLAMA_CPP = "make bench-peers  (pip install llama-cpp-python==0.3.36; ~4 min build)"


def read_bandwidth_gbs(threads: int, mib: int = 512, rounds: int = 5) -> float:
    """Best-of-``rounds`` GB/s of summing a ``mib`` MiB fp32 tensor (streams from DRAM:
    far larger than the caches), with the benchmark's thread count."""
    import torch

    x = torch.ones(mib * 1024 * 1024 // 4)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x.sum()
        best = min(_timed(x.sum) for _ in range(rounds))
    finally:
        torch.set_num_threads(old)
    return round(x.numel() * 4 / best / 1e9, 2)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def gguf_path(model: str) -> Path | None:
    """The GGUF behind a bundled model name or a .gguf path (None: no GGUF to compare)."""
    if model.endswith(".gguf"):
        return Path(model)
    try:
        from engine import bundled_gguf_path

        return bundled_gguf_path(model)
    except Exception:  # not a bundled model: a Hugging Face directory has no GGUF peer
        return None


class LlamaCppPeer:
    """llama.cpp through llama-cpp-python: greedy decoding of the same token ids."""

    def __init__(self, path: Path, threads: int, n_ctx: int = 2048) -> None:
        from llama_cpp import Llama

        self.path = path
        self.llm = Llama(str(path), n_threads=threads, n_ctx=n_ctx, verbose=False)
        self.file_bytes = path.stat().st_size

    def generate(self, prompt: list[int], max_tokens: int) -> tuple[int, float]:
        """(tokens generated, seconds) for prompt processing plus greedy decoding."""
        self.llm.reset()
        start = time.perf_counter()
        self.llm.eval(prompt)
        for _ in range(max_tokens):
            token = self.llm.sample(temp=0.0)
            self.llm.eval([token])
        return max_tokens, time.perf_counter() - start

    def single(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        n, seconds = 0, 0.0
        for p in prompts:
            k, dt = self.generate(p, max_tokens)
            n, seconds = n + k, seconds + dt
        return {
            "output_tokens": n,
            "seconds": round(seconds, 3),
            "tokens_per_s": round(n / seconds, 2),
        }

    def prefill(self, prompt: list[int]) -> float:
        """Prompt tokens per second of one prompt evaluation."""
        self.llm.reset()
        start = time.perf_counter()
        self.llm.eval(prompt)
        return round(len(prompt) / (time.perf_counter() - start), 1)


def crashed_note(exc: Any) -> dict[str, Any]:
    """The report's note for a peer whose process crashed (a PeerProcessCrashed): named
    crashed, with the signal, not a blank failure of the whole benchmark."""
    return {
        "available": False,
        "crashed": exc.signal or f"exit code {exc.exitcode}",
        "why": str(exc),
        "how": "a native llama.cpp build that uses AMX crashed this way on Intel AMX CPUs; "
        "`make bench-peers` builds it without (GGML_NATIVE=OFF) where /proc/cpuinfo shows "
        "amx_tile: rebuild with `rm .venv/.llama-cpp-installed && make bench-peers`",
    }


def llama_cpp_gguf(model: str) -> tuple[Path | None, dict[str, Any]]:
    """The GGUF llama.cpp can be compared on, or None and a note saying why not (and how
    to get llama.cpp)."""
    path = gguf_path(model)
    if path is None:
        return None, {"available": False, "why": f"{model} has no GGUF file to compare on"}
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return None, {
            "available": False,
            "why": "llama-cpp-python is not installed",
            "how": HOW_TO_GET_LLAMA_CPP,
        }
    return path, {"available": True, "gguf": path.name}


def load_llama_cpp(model: str, threads: int) -> tuple[Any | None, dict[str, Any]]:
    """The peer in a process of its own (see PeerProcess), or None and a note saying why
    (and how to get it)."""
    from bench.kit.peer_process import PeerProcess, PeerProcessCrashed

    path, note = llama_cpp_gguf(model)
    if path is None:
        return None, note
    try:
        peer = PeerProcess(LlamaCppPeer, path, threads)
    except PeerProcessCrashed as exc:
        return None, crashed_note(exc)
    return peer, {
        "available": True,
        "gguf": path.name,
        "gguf_bytes": path.stat().st_size,
        "threads": threads,
        "process": "own",
    }


def peer_ratios(
    engine: dict[str, Any], peers: dict[str, Any], prefill: dict[str, float]
) -> dict[str, float]:
    """engine / peer, single stream and prefill, for each peer measured in this run."""
    ratios = {}
    mine = engine["single_stream"]["tokens_per_s"]
    for name in ("llama.cpp", "engine_torch_kernels"):
        theirs = peers.get(name, {}).get("single_stream")
        if theirs:
            ratios[f"single_stream_vs_{name}"] = round(mine / theirs["tokens_per_s"], 2)
        if prefill.get(name) and prefill.get("engine"):
            ratios[f"prefill_vs_{name}"] = round(prefill["engine"] / prefill[name], 2)
    return ratios


class EnginePeer:
    """Our engine in a peer process: ``cpu_kernels=False`` builds it on its torch-only
    kernels (the engine before its C++ kernels)."""

    def __init__(self, cpu_kernels: bool, threads: int, **engine_kwargs: Any) -> None:
        import torch

        from engine import AsyncLLM, CpuKernels

        torch.set_num_threads(threads)
        CpuKernels.enabled = cpu_kernels
        self.llm = AsyncLLM(**engine_kwargs)
        asyncio.run(self.llm.warmup())

    def single(self, prompts: list[list[int]], max_tokens: int, ignore_eos: bool) -> dict[str, Any]:
        from bench.engine.streams import engine_single
        from engine import SamplingParams

        params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=ignore_eos)
        asyncio.run(self.llm.free_all())  # cold prefix cache: the peers have none
        result = asyncio.run(engine_single(self.llm, prompts, params))
        result.pop("tokens")
        return result

    def prefill(self, prompt: list[int]) -> float:
        from bench.engine.streams import engine_prefill

        return engine_prefill(self.llm, prompt)

    def close(self) -> None:
        self.llm.close()


def threaded(threads: int, factory: Any, *args: Any) -> Any:
    """``factory(*args)`` after setting torch's thread count (a peer process's builder)."""
    import torch

    torch.set_num_threads(threads)
    return factory(*args)


def torch_kernels_peer(threads: int, engine_kwargs: dict[str, Any]) -> Any:
    """The engine on its torch-only kernels (the engine before its C++ kernels), built
    inside its PeerProcess."""
    return EnginePeer(False, threads, **engine_kwargs)
