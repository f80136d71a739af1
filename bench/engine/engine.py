"""Engine throughput: our engine (1 and N AsyncLLM streams) vs transformers and llama.cpp, same run.

Peers, all in this run and interleaved round by round, each in a process of its own
(see bench/kit/peer_process.py): transformers ``generate``; the
engine on its torch-only kernels (``CpuKernels.enabled = False``: the engine before its
C++ kernels); llama.cpp on the same GGUF when llama-cpp-python is installed (`make
bench-peers`). Also: prefill tokens/s of one 512-token prompt, the measured memory read
bandwidth and each single stream's share of the physical limit (tok/s x weight bytes
read per token / bandwidth), and a long call past the context (bench/engine/long_call.py;
``--long-call-only`` runs just that).

Same model, prompts (chat-templated questions), greedy decoding and max_tokens for all.
transformers runs N prompts as one static batch with left padding; our engine N
concurrent AsyncLLM streams. Output tokens count up to and including EOS (llama.cpp:
max_tokens). Ratios are engine / peer in this run; prefix caches emptied before each.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from typing import Any

from bench.engine.prompts import QUESTIONS
from bench.engine.transformers_peer import TransformersPeer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--quantization", default="int8", choices=["int8", "int4", "none"])
    parser.add_argument("--group-size", type=int, default=32, help="int4 group size")
    parser.add_argument("--max-tokens", type=int, default=None, help="default 128 (quick: 48)")
    parser.add_argument("--streams", type=int, default=32, help="concurrent streams")
    parser.add_argument("--single", type=int, default=None, help="single-stream prompts (4/2)")
    parser.add_argument(
        "--ignore-eos", action="store_true", help="always generate max_tokens (fixed length)"
    )
    parser.add_argument("--rounds", type=int, default=None, help="single-stream rounds (2/3)")
    parser.add_argument("--num-threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--int8-kernel",
        default="measure",
        choices=["measure", "vnni", "amx", "int_mm"],
        help="int8 products: measured per shape (default), or one path forced",
    )
    parser.add_argument("--skip-transformers", action="store_true")
    parser.add_argument("--skip-torch-kernels", action="store_true", help="no torch-only engine")
    parser.add_argument("--skip-llama-cpp", action="store_true")
    parser.add_argument("--speculative", default="off", help="off, ngram, draft or auto")
    parser.add_argument("--draft-model", default=None, help="--speculative draft/auto's draft")
    parser.add_argument("--prefill-tokens", type=int, default=512)
    parser.add_argument("--long-tokens", type=int, default=None, help="latency: 1800 (quick 600)")
    parser.add_argument("--short-delay", type=float, default=0.5, help="latency: s after longs")
    parser.add_argument("--max-step-ms", type=float, default=150.0)
    parser.add_argument("--skip-latency", action="store_true")
    # the long call (bench/engine/long_call.py)
    parser.add_argument("--skip-long-call", action="store_true")
    parser.add_argument("--long-call-only", action="store_true", help="only the long call")
    parser.add_argument("--long-context", type=int, default=None, help="model's (quick 1024)")
    parser.add_argument("--long-turns", type=int, default=None, help="16 (quick 10)")
    parser.add_argument("--long-turn-tokens", type=int, default=None, help="750 (quick 160)")
    parser.add_argument("--long-answer-tokens", type=int, default=48)
    parser.add_argument("--long-prefill-tokens", type=int, default=None, help="7500 (quick 1500)")
    parser.add_argument(
        "--long-prefill-only", action="store_true", help="only the long prefill, per mode"
    )
    parser.add_argument(
        "--int8-paths",
        default=None,
        help="only prefill and --streams decode per int8_kernel mode, e.g. vnni,measure",
    )
    parser.add_argument(
        "--attention-bf16",
        default="auto",
        help="--long-prefill-only: attention_bf16 modes to compare, e.g. none,values,all",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The benchmark; every engine and peer process is closed however it ends."""
    from bench.engine.int8_paths import run_int8_paths
    from bench.engine.long_call import run_long_call, run_long_prefill

    quick = bool(getattr(args, "quick", False))
    if args.int8_paths:
        return {"int8_paths": run_int8_paths(args, quick)}
    if args.long_prefill_only:
        return {"long_prefill": run_long_prefill(args, quick)}
    if args.long_call_only:
        return {"long_call": run_long_call(args, quick)}
    with contextlib.ExitStack() as stack:
        result = _run(args, stack)
    if not args.skip_long_call:
        result["long_call"] = run_long_call(args, quick)
    return result


def _run(args: argparse.Namespace, stack: contextlib.ExitStack) -> dict[str, Any]:
    import torch

    from bench.engine.latency import run_latency
    from bench.engine.peers import (
        crashed_note,
        load_llama_cpp,
        peer_ratios,
        read_bandwidth_gbs,
        threaded,
        torch_kernels_peer,
    )
    from bench.engine.streams import best_round, engine_prefill, engine_single, engine_streams
    from bench.kit.machine import describe
    from bench.kit.peer_process import PeerProcess, PeerProcessCrashed
    from engine import AsyncLLM, CpuKernels, SamplingParams
    from engine import weight_bytes as model_weight_bytes

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    quick = bool(getattr(args, "quick", False))
    max_tokens = args.max_tokens or (48 if quick else 128)
    n_single = args.single or (2 if quick else 4)
    engine_kwargs: dict[str, Any] = dict(
        model=args.model,
        dtype=args.dtype,
        max_num_seqs=max(args.streams, 8),
        max_step_ms=args.max_step_ms,
        quantization=args.quantization,
        quantization_group_size=args.group_size,
        int8_kernel=args.int8_kernel,
        speculative=args.speculative,
        draft_model=args.draft_model,
    )
    load_start = time.perf_counter()
    llm = AsyncLLM(**engine_kwargs)
    stack.callback(llm.close)
    load_s = time.perf_counter() - load_start
    tok = llm.tokenizer
    threads = torch.get_num_threads()
    # Every peer in a process of its own (see PeerProcess): one process's runtimes slow
    # each other down, which no user running one of them sees.
    torch_llm = None
    if not args.skip_torch_kernels and CpuKernels.lib() is not None:
        torch_llm = stack.enter_context(PeerProcess(torch_kernels_peer, threads, engine_kwargs))
    llama, llama_note = (None, {"available": False, "why": "--skip-llama-cpp"})
    if not args.skip_llama_cpp:
        llama, llama_note = load_llama_cpp(args.model, threads)
        if llama is not None:
            stack.callback(llama.close)

    def chat(q: str) -> list[int]:
        enc = tok.apply_chat_template(
            [{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True
        )
        return list(enc["input_ids"] if hasattr(enc, "keys") else enc)

    batch = [chat(QUESTIONS[i % len(QUESTIONS)]) for i in range(args.streams)]
    single = batch[:n_single]
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=args.ignore_eos)
    eos = set(llm.engine.scheduler.eos_token_ids)

    hf = None
    if not args.skip_transformers:
        hf = stack.enter_context(
            PeerProcess(
                threaded,
                threads,
                TransformersPeer,
                llm.model_path,
                args.dtype,
                args.ignore_eos,
                eos,
            )
        )
        hf.warmup(single[0])
    asyncio.run(llm.warmup())
    gen = torch.Generator().manual_seed(0)
    vocab = int(llm.engine.model_config.vocab_size)
    long_prompt = torch.randint(vocab, (args.prefill_tokens,), generator=gen).tolist()
    # Every side runs once per round, in turn, so a change in machine load hits all of
    # them; single streams are short: the best of a few rounds is reported, all listed.
    rounds: dict[str, list[dict[str, Any]]] = {
        "engine": [],
        "engine_torch_kernels": [],
        "transformers": [],
        "llama.cpp": [],
    }
    prefill: dict[str, list[float]] = {"engine": [], "engine_torch_kernels": [], "llama.cpp": []}
    for _ in range(args.rounds or (2 if quick else 3)):
        asyncio.run(llm.free_all())  # cold prefix cache: the peers have none
        rounds["engine"].append(asyncio.run(engine_single(llm, single, params)))
        prefill["engine"].append(engine_prefill(llm, long_prompt))
        if torch_llm is not None:
            rounds["engine_torch_kernels"].append(
                torch_llm.single(single, max_tokens, args.ignore_eos)
            )
            prefill["engine_torch_kernels"].append(torch_llm.prefill(long_prompt))
        if hf is not None:
            rounds["transformers"].append(hf.single(single, max_tokens))
        if llama is not None:
            try:
                rounds["llama.cpp"].append(llama.single(single, max_tokens))
                prefill["llama.cpp"].append(llama.prefill(long_prompt))
            except PeerProcessCrashed as exc:  # reported as crashed; the rest goes on
                llama, llama_note = None, crashed_note(exc)
                rounds["llama.cpp"], prefill["llama.cpp"] = [], []
    engine: dict[str, Any] = {"single_stream": best_round(rounds["engine"])}
    baseline: dict[str, Any] = {}
    if hf is not None:
        baseline["single_stream"] = best_round(rounds["transformers"])
    peers: dict[str, Any] = {"llama.cpp": llama_note}
    if llama is not None:
        peers["llama.cpp"]["single_stream"] = best_round(rounds["llama.cpp"])
    if torch_llm is not None:
        peers["engine_torch_kernels"] = {
            "single_stream": best_round(rounds["engine_torch_kernels"])
        }
        torch_llm.close()
    prefill_best = {k: round(max(v), 1) for k, v in prefill.items() if v}
    asyncio.run(llm.free_all())
    engine["concurrent"] = asyncio.run(engine_streams(llm, batch, params))
    if hf is not None:
        baseline["static_batch"] = hf.static_batch(batch, max_tokens)
    weight_bytes = model_weight_bytes(llm.engine.model)
    latency = None
    if not args.skip_latency:
        long_tokens = args.long_tokens or (600 if quick else 1800)
        latency = run_latency(llm, single[0], long_tokens, args.short_delay, args.max_step_ms)
    llm.close()
    for peer in (hf, llama):
        if peer is not None:
            peer.close()
    bandwidth = read_bandwidth_gbs(threads)
    single_tps = engine["single_stream"]["tokens_per_s"]
    limits: dict[str, Any] = {
        "read_bandwidth_gb_s": bandwidth,
        "engine_weight_bytes": weight_bytes,
        # share of the memory-bound ceiling (single stream, prompt processing included)
        "engine_physical_limit_ratio": round(single_tps * weight_bytes / (bandwidth * 1e9), 3),
    }
    if llama is not None:
        llama_tps = peers["llama.cpp"]["single_stream"]["tokens_per_s"]
        limits["llama_cpp_weight_bytes"] = llama_note["gguf_bytes"]
        limits["llama_cpp_physical_limit_ratio"] = round(
            llama_tps * llama_note["gguf_bytes"] / (bandwidth * 1e9), 3
        )
    result: dict[str, Any] = {
        "model": args.model,
        "dtype": args.dtype,
        "quantization": args.quantization,
        "speculative": args.speculative,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "max_tokens": max_tokens,
        "ignore_eos": args.ignore_eos,
        "streams": args.streams,
        "single_stream_prompts": n_single,
        "engine_load_s": round(load_s, 2),
        "peers_in_own_processes": True,
        "cpu_kernels": CpuKernels.lib() is not None,
        "cpu_kernels_build_s": CpuKernels.build_seconds,
        "int8_kernel": args.int8_kernel,
        "int8_paths": llm.stats().int8_paths,  # per shape: 1-3, 4-8, 9-64, 65+ rows
        "machine": describe(),
        "engine": engine,
        "peers": peers,
        "prefill_tokens_per_s": {"prompt_tokens": len(long_prompt), **prefill_best},
        "limits": limits,
        "step_time_budget": latency,
        "peer_ratios": peer_ratios(engine, peers, prefill_best),
    }
    if hf is not None:
        result["transformers"] = baseline
        result["ratios"] = {
            "single_stream": round(
                engine["single_stream"]["tokens_per_s"] / baseline["single_stream"]["tokens_per_s"],
                2,
            ),
            "concurrent_vs_static_batch": round(
                engine["concurrent"]["tokens_per_s"] / baseline["static_batch"]["tokens_per_s"],
                2,
            ),
            # transformers serving requests one at a time (what its backend in app/ does)
            "concurrent_vs_sequential": round(
                engine["concurrent"]["tokens_per_s"] / baseline["single_stream"]["tokens_per_s"],
                2,
            ),
        }
        if args.dtype == "float32" and args.quantization == "none":  # the same greedy tokens
            result["single_stream_same_tokens_as_transformers"] = (
                engine["single_stream"]["tokens"] == baseline["single_stream"]["tokens"]
            )
        baseline["single_stream"].pop("tokens")
    engine["single_stream"].pop("tokens")
    engine["concurrent"].pop("tokens")
    return result
