"""The engine side of `bench engine`: N concurrent AsyncLLM streams, timed per token."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def best_round(runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = dict(max(runs, key=lambda r: r["tokens_per_s"]))
    best["tokens_per_s_rounds"] = [r["tokens_per_s"] for r in runs]
    return best


async def engine_streams(llm: Any, prompts: list[list[int]], params: Any) -> dict[str, Any]:
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
        "ttft_p50_ms": round(1000 * percentile(ttft, 50), 1),
        "ttft_p99_ms": round(1000 * percentile(ttft, 99), 1),
        "tpot_p50_ms": round(1000 * percentile(tpot, 50), 1),
        "tpot_p99_ms": round(1000 * percentile(tpot, 99), 1),
        "tokens": tokens,
    }


async def engine_single(llm: Any, prompts: list[list[int]], params: Any) -> dict[str, Any]:
    runs = [await engine_streams(llm, [p], params) for p in prompts]
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


def engine_prefill(llm: Any, prompt: list[int]) -> float:
    """Prompt tokens per second of one prompt evaluation, prefix cache emptied first."""
    from engine import SamplingParams

    asyncio.run(llm.free_all())
    start = time.perf_counter()
    asyncio.run(llm.generate(prompt, SamplingParams(max_tokens=1, temperature=0.0)))
    return len(prompt) / (time.perf_counter() - start)
