"""Step-time-bounded scheduling in `bench engine`: a short request behind long prefills.

Four distinct long prompts (``--long-tokens``, default 1800; quick: 600) are submitted
at once; ``--short-delay`` s later, while they prefill, one short chat request arrives.
The same requests run under three settings of one loaded engine, one after another
with an empty prefix cache: fcfs with unbounded steps, priority with unbounded steps
(the engine before its step-time budget), and priority with ``max_step_ms``. Reported:
the short request's TTFT, the longs' completion time (submission to the last one's
end), and the short's TTFT alone on an idle engine (its own prefill).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

SETTINGS: dict[str, dict[str, Any]] = {
    "fcfs_unbounded": {"scheduling_policy": "fcfs", "max_step_ms": None},
    "priority_unbounded": {"scheduling_policy": "priority", "max_step_ms": None},
    "priority_bounded": {"scheduling_policy": "priority"},  # max_step_ms: the config's
}


async def _ttft(llm: Any, prompt: list[int], params: Any, rid: str) -> tuple[float, float]:
    """(seconds to the first token, seconds to the end) of one request."""
    start = time.perf_counter()
    first = None
    async for delta in llm.stream(prompt, params, request_id=rid):
        if delta.token_ids and first is None:
            first = time.perf_counter() - start
    return first or 0.0, time.perf_counter() - start


async def _scenario(
    llm: Any, longs: list[list[int]], short: list[int], delay: float, tag: str
) -> dict[str, float]:
    from engine import SamplingParams

    long_params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    short_params = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
    start = time.perf_counter()
    tasks = [
        asyncio.create_task(_ttft(llm, p, long_params, f"{tag}-long-{i}"))
        for i, p in enumerate(longs)
    ]
    await asyncio.sleep(delay)
    short_ttft, _ = await _ttft(llm, short, short_params, f"{tag}-short")
    await asyncio.gather(*tasks)
    return {
        "short_ttft_s": round(short_ttft, 3),
        "longs_done_s": round(time.perf_counter() - start, 3),
    }


def run_latency(
    llm: Any, short: list[int], long_tokens: int, delay: float, max_step_ms: float | None
) -> dict[str, Any]:
    """The scenario under each of SETTINGS; ratios against the unbounded settings."""
    import torch

    from engine import SamplingParams

    vocab = int(llm.engine.model_config.vocab_size)
    gen = torch.Generator().manual_seed(1)
    longs = [torch.randint(vocab, (long_tokens,), generator=gen).tolist() for _ in range(4)]
    alone_params = SamplingParams(max_tokens=1, temperature=0.0)
    asyncio.run(llm.free_all())
    alone = asyncio.run(_ttft(llm, short, alone_params, "alone"))[0]
    results: dict[str, Any] = {}
    for name, fields in SETTINGS.items():
        fields = {"max_step_ms": max_step_ms, **fields}
        asyncio.run(llm.set_scheduling(**fields))
        asyncio.run(llm.free_all())
        llm.reset_stats()
        results[name] = asyncio.run(_scenario(llm, longs, short, delay, name))
        stats = llm.stats()
        results[name]["step_ms_max"] = stats.step_ms_max
        results[name]["steps"] = stats.steps
        results[name]["steps_over_budget"] = stats.steps_over_budget
    asyncio.run(llm.set_scheduling(scheduling_policy="priority", max_step_ms=max_step_ms))
    bounded, fcfs = results["priority_bounded"], results["fcfs_unbounded"]
    today = results["priority_unbounded"]
    return {
        "long_prompts": [long_tokens] * 4,
        "short_prompt_tokens": len(short),
        "short_arrives_after_s": delay,
        "max_step_ms": max_step_ms,
        "short_ttft_alone_s": round(alone, 3),
        **results,
        "ratios": {
            "short_ttft_bounded_vs_fcfs": round(bounded["short_ttft_s"] / fcfs["short_ttft_s"], 3),
            "short_ttft_bounded_vs_unbounded": round(
                bounded["short_ttft_s"] / today["short_ttft_s"], 3
            ),
            "longs_done_bounded_vs_unbounded": round(
                bounded["longs_done_s"] / today["longs_done_s"], 3
            ),
            # the target: within its own prefill plus two step-time targets
            "short_ttft_minus_alone_in_step_targets": round(
                (bounded["short_ttft_s"] - alone) * 1000 / (max_step_ms or 1.0), 2
            ),
        },
    }
