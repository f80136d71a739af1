"""SchedulingPolicy: the rules ``EngineConfig.scheduling_policy`` sets for the Scheduler.

- ``fcfs``: continuous batching in arrival order.
- ``static``: the baseline. Nothing is admitted while a batch runs; a new batch
  starts when ``max_num_seqs`` requests wait or the oldest has waited
  ``static_batch_timeout_s``.
- ``priority``: queue order is the key ``priority + arrival_time / priority_aging_s``
  (lower first). A request that names no priority gets ``default_priority`` (one
  level per ``DEFAULT_PRIORITY_TOKENS`` prompt tokens), so short prompts go first.
  The arrival term is the aging: a request R with priority p is overtaken only by
  requests of priority p' that arrive less than ``priority_aging_s * (p - p')``
  seconds after it; later ones queue behind R. So R is admitted within
  ``priority_aging_s * (p - p_min)`` s (p_min: the lowest priority in use) plus the
  time to serve what was queued ahead of it then, which backpressure bounds
  (``max_waiting_tokens``, ``max_waiting_requests``).
  High-priority requests (priority <= ``high_priority_max``) own a reserve: other
  work may use only ``1 - preemption_reserve`` of each step's tokens and of the
  KV pool, and only the reserve's share of a step's tokens while high-priority
  prompts are being prefilled (such steps stay short). When the reserve is not
  enough for the high-priority requests at the head of the queue, running
  sequences queued after them are preempted at the next step (lowest priority
  first) instead of making them wait for those to end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.scheduling.cache_aware_pick import PICK_WINDOW
from engine.sequence import Sequence


class SchedulingPolicy:
    """Queue order, who is high priority, the reserve, when a static batch starts.

    Pure rules: the Scheduler owns the queues and asks.
    """

    def __init__(self, config: EngineConfig) -> None:
        self.name = config.scheduling_policy
        self.config = config

    def order_key(self, seq: Sequence) -> tuple[float, int]:
        """The one place that orders requests (lower first)."""
        if self.name == "priority":
            return (seq.priority + seq.arrival_time / self.config.priority_aging_s, seq.seq_id)
        return (seq.arrival_time, seq.seq_id)

    def is_high(self, seq: Sequence) -> bool:
        """May this sequence use the reserve and preempt? ("priority" only)"""
        return self.name == "priority" and seq.priority <= self.config.high_priority_max

    def reserve(self, num_blocks: int) -> tuple[int, int]:
        """(KV blocks, tokens of each step) kept for high-priority work."""
        share = self.config.preemption_reserve if self.name == "priority" else 0.0
        return int(num_blocks * share), int(self.config.max_num_batched_tokens * share)

    def high_prefill_pending(self, waiting: list[Sequence], running: list[Sequence]) -> bool:
        """Is high-priority prompt work queued (near the head) or being prefilled?"""
        return any(self.is_high(s) for s in waiting[:PICK_WINDOW]) or any(
            self.is_high(s) and s.num_computed_tokens < s.num_tokens - 1 for s in running
        )

    def may_admit(self, waiting: list[Sequence], running: list[Sequence]) -> bool:
        """May waiting requests start now? Always, but in "static" only as a new batch."""
        if self.name != "static" or not waiting:
            return True
        if running:
            return False  # a static batch runs to its end
        oldest = min(seq.arrival_time for seq in waiting)
        full = len(waiting) >= self.config.max_num_seqs
        return full or time.monotonic() - oldest >= self.config.static_batch_timeout_s

    def high_priority_victims(
        self, waiting: list[Sequence], running: list[Sequence], bm: BlockManager
    ) -> Iterator[Sequence]:
        """The running sequences to preempt now for the high-priority requests at the
        head of the queue, one at a time (the caller preempts each before the next).

        Walks the waiting queue while it holds high-priority requests that a step's
        token budget could start; while their KV blocks or sequence slots are missing,
        yields the last running sequence, if it is queued after the one in need.
        """
        tokens = self.config.max_num_batched_tokens
        need_blocks = 0
        for need_slots, seq in enumerate(waiting, start=1):
            if tokens <= 0 or not self.is_high(seq):
                return
            cached = bm.num_cached_tokens(seq)
            need_blocks += bm.blocks_needed(seq.num_tokens) - cached // bm.block_size
            tokens -= seq.num_tokens - cached
            while (
                bm.num_free_blocks < need_blocks
                or self.config.max_num_seqs - len(running) < need_slots
            ):
                if not running or self.order_key(running[-1]) < self.order_key(seq):
                    return
                yield running[-1]
