"""Engine throughput: our engine (1 and N AsyncLLM streams) vs transformers generate, same run.

Same model, dtype, prompts (chat-templated questions), greedy decoding and max_tokens for
both. transformers runs single streams one after another and N prompts as one static
batch with left padding; our engine runs single streams and N concurrent streams
through AsyncLLM. Output tokens count up to and including EOS. Ratios are engine /
transformers, measured in this run (the machines are shared: absolute numbers drift).
The engine's prefix cache is on (the default) but emptied before each measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

QUESTIONS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Hi! How are you today?",
    "Give me a tip for sleeping better.",
    "What is a black hole?",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Suggest a name for a grey cat.",
    "How do I boil an egg?",
    "What does a CPU do?",
    "Tell me a short joke.",
    "Summarize the plot of Romeo and Juliet in two sentences.",
    "What are the three states of matter?",
    "How many legs does a spider have?",
]


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
    parser.add_argument("--skip-transformers", action="store_true")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = dict(max(runs, key=lambda r: r["tokens_per_s"]))
    best["tokens_per_s_rounds"] = [r["tokens_per_s"] for r in runs]
    return best


def _count(tokens: list[int], eos: set[int]) -> int:
    """Generated tokens up to and including the first EOS."""
    for i, t in enumerate(tokens):
        if t in eos:
            return i + 1
    return len(tokens)


async def _engine_streams(llm: Any, prompts: list[list[int]], params: Any) -> dict[str, Any]:
    ttft: list[float] = []
    tpot: list[float] = []
    tokens: list[list[int]] = [[] for _ in prompts]

    async def one(i: int, prompt: list[int]) -> None:
        start = time.perf_counter()
        first = None
        ids: list[int] = []
        async for delta in llm.stream(prompt, params, request_id=f"bench-{i}-{start}"):
            if delta.token_ids and first is None:
                first = time.perf_counter()
            ids.extend(delta.token_ids)
        end = time.perf_counter()
        assert first is not None
        ttft.append(first - start)
        if len(ids) > 1:
            tpot.append((end - first) / (len(ids) - 1))
        tokens[i] = ids

    start = time.perf_counter()
    await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    wall = time.perf_counter() - start
    n = sum(len(t) for t in tokens)
    return {
        "output_tokens": n,
        "seconds": round(wall, 3),
        "tokens_per_s": round(n / wall, 2),
        "ttft_p50_ms": round(1000 * _pct(ttft, 50), 1),
        "ttft_p99_ms": round(1000 * _pct(ttft, 99), 1),
        "tpot_p50_ms": round(1000 * _pct(tpot, 50), 1),
        "tpot_p99_ms": round(1000 * _pct(tpot, 99), 1),
        "tokens": tokens,
    }


async def _engine_single(llm: Any, prompts: list[list[int]], params: Any) -> dict[str, Any]:
    runs = [await _engine_streams(llm, [p], params) for p in prompts]
    n = sum(r["output_tokens"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    return {
        "output_tokens": n,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(n / seconds, 2),
        "ttft_p50_ms": statistics.median(r["ttft_p50_ms"] for r in runs),
        "tpot_p50_ms": statistics.median(r["tpot_p50_ms"] for r in runs),
        "tokens": [r["tokens"][0] for r in runs],
    }


def _hf_generate(
    model: Any, tokenizer: Any, prompts: list[list[int]], max_tokens: int, ignore_eos: bool
) -> tuple[list[list[int]], float]:
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])  # left padding
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    extra = {"min_new_tokens": max_tokens} if ignore_eos else {}
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=max_tokens,
            do_sample=False,
            pad_token_id=pad,
            **extra,
        )
    return out[:, width:].tolist(), time.perf_counter() - start


class _Transformers:
    """The baseline: transformers ``generate`` on the same model, dtype and prompts."""

    def __init__(self, path: Any, dtype_name: str, ignore_eos: bool, eos: set[int]) -> None:
        import torch
        import transformers

        dtype = torch.float32 if dtype_name == "float32" else torch.bfloat16
        self.model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
        self.model.eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
        self.ignore_eos = ignore_eos
        self.eos = set() if ignore_eos else eos

    def warmup(self, prompt: list[int]) -> None:
        _hf_generate(self.model, self.tokenizer, [prompt], 4, False)

    def single(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        outs, seconds = [], 0.0
        for p in prompts:
            toks, dt = _hf_generate(self.model, self.tokenizer, [p], max_tokens, self.ignore_eos)
            outs.append(toks[0][: _count(toks[0], self.eos)])
            seconds += dt
        n = sum(len(t) for t in outs)
        return {
            "output_tokens": n,
            "seconds": round(seconds, 3),
            "tokens_per_s": round(n / seconds, 2),
            "tokens": outs,
        }

    def static_batch(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        toks, seconds = _hf_generate(
            self.model, self.tokenizer, prompts, max_tokens, self.ignore_eos
        )
        n = sum(_count(t, self.eos) for t in toks)
        return {
            "batch_size": len(prompts),
            "output_tokens": n,
            "seconds": round(seconds, 3),
            "tokens_per_s": round(n / seconds, 2),
        }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from engine import AsyncLLM, SamplingParams

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    quick = bool(getattr(args, "quick", False))
    max_tokens = args.max_tokens or (48 if quick else 128)
    n_single = args.single or (2 if quick else 4)
    load_start = time.perf_counter()
    llm = AsyncLLM(
        args.model,
        dtype=args.dtype,
        max_num_seqs=max(args.streams, 8),
        quantization=args.quantization,
        quantization_group_size=args.group_size,
    )
    load_s = time.perf_counter() - load_start
    tok = llm.tokenizer

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
        hf = _Transformers(llm.model_path, args.dtype, args.ignore_eos, eos)
        hf.warmup(single[0])
    asyncio.run(llm.warmup())
    # Engine and transformers alternate, so a change in machine load hits both sides;
    # single streams are short: the best of a few rounds is reported, all rounds listed.
    rounds: dict[str, list[dict[str, Any]]] = {"engine": [], "transformers": []}
    for _ in range(args.rounds or (2 if quick else 3)):
        asyncio.run(llm.free_all())  # cold prefix cache: transformers has none
        rounds["engine"].append(asyncio.run(_engine_single(llm, single, params)))
        if hf is not None:
            rounds["transformers"].append(hf.single(single, max_tokens))
    engine: dict[str, Any] = {"single_stream": _best(rounds["engine"])}
    baseline: dict[str, Any] = {}
    if hf is not None:
        baseline["single_stream"] = _best(rounds["transformers"])
    asyncio.run(llm.free_all())
    engine["concurrent"] = asyncio.run(_engine_streams(llm, batch, params))
    if hf is not None:
        baseline["static_batch"] = hf.static_batch(batch, max_tokens)
    llm.close()
    result: dict[str, Any] = {
        "model": args.model,
        "dtype": args.dtype,
        "quantization": args.quantization,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "max_tokens": max_tokens,
        "ignore_eos": args.ignore_eos,
        "streams": args.streams,
        "single_stream_prompts": n_single,
        "engine_load_s": round(load_s, 2),
        "engine": engine,
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
