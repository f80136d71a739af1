"""The serve mix driven straight into our engine (AsyncLLM, the interface the server
uses), one scheduling mode after another on the same arrivals, with the same records as
the HTTP drivers.

The modes, the table's rows (issue #54):
- ``static``: static batching, the write-up's baseline (no quantization);
- ``fcfs``: continuous batching, first come first served (no quantization);
- ``reorder``: priority order between steps only, no reserve and no preemption (what
  waiting for the step does; no quantization);
- ``priority``: + the reserve and predictive preemption (no quantization);
- ``product``: + int8 weights and the rest of the engine's defaults, as `r1voice serve`
  runs it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.serve.records import StreamTimer, failed, refused
from bench.serve.workload import Request

MODES = ("static", "fcfs", "reorder", "priority", "product")
# the scheduling fields each mode sets (EngineConfig); the rest are the engine's defaults
SCHEDULING: dict[str, dict[str, Any]] = {
    "static": {"scheduling_policy": "static"},
    "fcfs": {"scheduling_policy": "fcfs"},
    "reorder": {
        "scheduling_policy": "priority",
        "high_priority_max": -1,
        "preemption_reserve": 0.0,
    },
    "priority": {
        "scheduling_policy": "priority",
        "high_priority_max": 0,
        "preemption_reserve": 0.2,
    },
    "product": {"scheduling_policy": "priority", "high_priority_max": 0, "preemption_reserve": 0.2},
}


def quantization(mode: str) -> str:
    return "int8" if mode == "product" else "none"


def prompts(llm: Any, workload: list[Request]) -> list[list[int]]:
    """Each request's chat as the model's prompt token ids (its chat template)."""
    out = []
    for req in workload:
        encoded = llm.tokenizer.apply_chat_template(
            req.messages, add_generation_prompt=True, tokenize=True
        )
        out.append(list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded))
    return out


async def drive(
    llm: Any, workload: list[Request], token_ids: list[list[int]]
) -> list[dict[str, Any]]:
    from engine import EngineBusyError, SamplingParams

    start = time.perf_counter()

    async def one(req: Request, ids: list[int]) -> dict[str, Any]:
        await asyncio.sleep(max(0.0, start + req.t - time.perf_counter()))
        sent = time.perf_counter()
        timer = StreamTimer(sent)
        params = SamplingParams(max_tokens=req.max_tokens, temperature=0.0, ignore_eos=True)
        try:
            async for delta in llm.stream(ids, params):
                now = time.perf_counter()
                if delta.token_ids:
                    timer.first_at = timer.first_at or now
                    timer.chunks += len(delta.token_ids)
        except EngineBusyError:
            return refused(req.kind, req.index, 429, sent - start)
        except Exception as exc:  # counted, never dropped from the percentiles
            return failed(req.kind, req.index, type(exc).__name__, sent - start)
        timer.done = True
        return timer.record(req.kind, req.index, time.perf_counter(), start)

    pairs = zip(workload, token_ids, strict=True)
    records = list(await asyncio.gather(*(one(r, t) for r, t in pairs)))
    for record, req in zip(records, workload, strict=True):
        record["lag"] = round(record["sent"] - req.t, 4)
    return records


def run_mode(
    llm: Any, mode: str, workload: list[Request], token_ids: list[list[int]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One mode's records and the engine's statistics, from an empty prefix cache."""
    asyncio.run(llm.free_all())
    asyncio.run(llm.set_scheduling(**SCHEDULING[mode]))
    llm.reset_stats()
    records = asyncio.run(drive(llm, workload, token_ids))
    stats = llm.stats().asdict()
    engine = {
        "preemptions": stats["num_preemptions"],
        "engine_refused": stats.get("num_refused", 0),
        "busy_share": round(stats["busy_share"], 3),
        "idle_waiting_share": round(stats["idle_waiting_share"], 3),
        "idle_empty_share": round(stats["idle_empty_share"], 3),
    }
    return records, engine
