"""What the engine hands back: finished outputs, stream deltas, statistics."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RequestOutput:
    """A request's result: the generated tokens only, and their text."""

    request_id: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    finished: bool
    finish_reason: str | None = None  # "stop", "length", "abort" or "error"
    num_cached_tokens: int = 0  # prompt tokens served from the prefix cache


@dataclass
class StreamDelta:
    """One piece of a stream: the text and tokens produced since the previous delta.

    ``text`` is always whole characters. The last delta has ``finished`` set and the
    reason; an aborted request ends with finish_reason "abort".
    """

    request_id: str
    text: str
    token_ids: list[int] = field(default_factory=list)
    finished: bool = False
    finish_reason: str | None = None
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0

    def __str__(self) -> str:
        return self.text


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
    waiting_tokens: int = 0
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

    def asdict(self) -> dict[str, Any]:
        return asdict(self)
