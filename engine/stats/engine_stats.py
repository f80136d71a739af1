"""EngineStats: a snapshot of the engine's load and counters, and how it is collected."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from engine.block_manager import BlockManager
from engine.stats.step_clock import ClockReading


@dataclass
class EngineStats:
    """A snapshot of the engine's load and counters since start (or reset)."""

    num_running: int
    num_waiting: int
    kv_blocks_used: int
    kv_blocks_total: int
    kv_blocks_free: int
    kv_block_size: int
    prompt_tokens: int
    generation_tokens: int
    prefix_cache_queries: int
    prefix_cache_hits: int
    num_preemptions: int
    num_refused: int = 0  # requests refused by backpressure
    # speculative decoding (0 when off): steps that verified a sequence's drafts, the
    # draft tokens verified, and those accepted (vLLM's spec_decode_num_* counters)
    spec_decode_num_drafts: int = 0
    spec_decode_num_draft_tokens: int = 0
    spec_decode_num_accepted_tokens: int = 0
    waiting_tokens: int = 0
    oldest_waiting_at: float | None = None  # time.monotonic() the oldest waiting one arrived
    busy_share: float = 0.0  # of wall time: a batch was running
    idle_waiting_share: float = 0.0  # requests waited but nothing was scheduled
    idle_empty_share: float = 0.0  # nothing to do at all
    peak_kv_blocks_used: int = 0
    prefix_cache_hit_rate: float = 0.0  # prefix_cache_hits / prefix_cache_queries (tokens)
    prefill_tokens_saved: int = 0  # prompt tokens not computed thanks to the cache
    prefill_tokens_computed: int = 0  # prompt (and recomputed) tokens computed
    num_clusters: int = 0  # semantic clustering (0 when off)
    largest_cluster: int = 0
    mean_cluster_size: float = 0.0
    embedded_requests: int = 0
    embed_ms_per_request: float = 0.0
    # step-time budget (EngineConfig.max_step_ms; 0: none)
    max_step_ms: float = 0.0
    step_ms_last: float = 0.0  # measured, schedule to postprocess
    step_ms_predicted_last: float = 0.0  # the cost model's prediction of that step
    step_ms_max: float = 0.0
    steps: int = 0
    steps_over_budget: int = 0
    step_prediction_error: float = 0.0  # moving mean of |measured - predicted| / measured
    # int8 projections: "<in>x<out>" -> the path of each row class (1-3, 4-8, 9-64, 65+),
    # "vnni" or "amx" (our kernels) or "int_mm" (torch/oneDNN), as
    # engine.layers.kernel_choice chose; the head's under "head <in>x<out>"
    int8_paths: dict[str, str] = field(default_factory=dict)

    def asdict(self) -> dict[str, Any]:
        return asdict(self)


def collect_stats(
    *,
    scheduler: Any,
    block_manager: BlockManager,
    reading: ClockReading,
    now: float,
    prompt_tokens: int,
    num_refused: int,
    clusterer: Any = None,
    max_step_ms: float | None = None,
    int8_paths: dict[str, str] | None = None,
) -> EngineStats:
    """Read (never change) the engine's parts into one EngineStats."""
    bm, sched = block_manager, scheduler
    shares = reading.shares(now)
    return EngineStats(
        num_running=len(sched.running),
        num_waiting=len(sched.waiting),
        kv_blocks_used=bm.num_blocks - bm.num_free_blocks,
        kv_blocks_total=bm.num_blocks,
        kv_blocks_free=bm.num_free_blocks,
        kv_block_size=bm.block_size,
        prompt_tokens=prompt_tokens,
        generation_tokens=sched.generation_tokens,
        prefix_cache_queries=bm.prefix_cache_queries,
        prefix_cache_hits=bm.prefix_cache_hits,
        num_preemptions=sched.num_preemptions,
        num_refused=num_refused,
        **_speculation(sched.speculator),
        waiting_tokens=sched.waiting_tokens,
        oldest_waiting_at=min((seq.arrival_time for seq in sched.waiting), default=None),
        busy_share=shares["busy"],
        idle_waiting_share=shares["stalled"],
        idle_empty_share=shares["idle"],
        peak_kv_blocks_used=bm.peak_blocks_used,
        prefix_cache_hit_rate=bm.prefix_cache_hits / max(bm.prefix_cache_queries, 1),
        # kept for bench/prefix.py, which reads it; same number as prefix_cache_hits
        prefill_tokens_saved=bm.prefix_cache_hits,
        prefill_tokens_computed=sched.prefill_tokens,
        **(clusterer.stats() if clusterer is not None else {}),
        max_step_ms=max_step_ms or 0.0,
        step_ms_last=round(reading.steps.last_ms, 3),
        step_ms_predicted_last=round(reading.steps.last_predicted_ms, 3),
        step_ms_max=round(reading.steps.max_ms, 3),
        steps=reading.steps.count,
        steps_over_budget=reading.steps.over_limit,
        step_prediction_error=round(reading.steps.prediction_error, 4),
        int8_paths=dict(int8_paths or {}),
    )


def _speculation(speculator: Any) -> dict[str, int]:
    if speculator is None:
        return {}
    return {
        "spec_decode_num_drafts": speculator.num_verified,
        "spec_decode_num_draft_tokens": speculator.num_drafted,
        "spec_decode_num_accepted_tokens": speculator.num_accepted,
    }
