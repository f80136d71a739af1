"""Scheduler: picks each step's work under the token budget and the KV pool."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.sequence import Sequence, SequenceStatus


@dataclass
class SchedulerOutput:
    """One step's batch: each sequence with how many of its tokens to compute now."""

    seqs: list[Sequence] = field(default_factory=list)
    num_new_tokens: list[int] = field(default_factory=list)
    num_preempted: int = 0

    def __bool__(self) -> bool:
        return bool(self.seqs)


class Scheduler:
    """Iteration-level scheduling with chunked prefill and preemption by recompute.

    Each step: running sequences first (decodes, and prefills cut short by the budget
    last step), then waiting ones in queue order while tokens, sequence slots and KV
    blocks last. A waiting request that does not fit simply waits. When a running
    sequence needs a block and the pool is empty, the last one in queue order is
    preempted: its blocks are freed and it goes back to waiting, to be recomputed.
    """

    def __init__(self, config: EngineConfig, block_manager: BlockManager, max_model_len: int):
        self.config = config
        self.block_manager = block_manager
        self.max_model_len = max_model_len
        self.waiting: list[Sequence] = []  # kept sorted by order_key
        self.running: list[Sequence] = []  # kept sorted by order_key
        self.eos_token_ids: set[int] = set()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.num_preemptions = 0

    @staticmethod
    def order_key(seq: Sequence) -> tuple[int, float, int]:
        """The one place that orders requests: priority (lower first), then FCFS."""
        return (seq.priority, seq.arrival_time, seq.seq_id)

    def add(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        bisect.insort(self.waiting, seq, key=self.order_key)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.config.max_num_batched_tokens
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            n = min(seq.num_tokens - seq.num_computed_tokens, budget)
            while not self.block_manager.ensure_slots(seq, seq.num_computed_tokens + n):
                self._preempt(self.running[-1])  # not yet scheduled: it sorts after seq
                out.num_preempted += 1
                if seq.status != SequenceStatus.RUNNING:
                    break
            else:
                out.seqs.append(seq)
                out.num_new_tokens.append(n)
                budget -= n
                i += 1
        # First blocks computed in this step: a request that starts with the same block
        # (a shared system prompt) waits one step and then reuses that KV.
        first_blocks = {
            h
            for seq in out.seqs
            if seq.num_computed_tokens < self.config.block_size
            and (h := self.block_manager.uncached_first_block(seq)) is not None
        }
        while (
            not out.num_preempted
            and self.waiting
            and budget > 0
            and len(self.running) < self.config.max_num_seqs
        ):
            seq = self.waiting[0]
            first = self.block_manager.uncached_first_block(seq)
            if first is not None and first in first_blocks:
                break
            if not self.block_manager.allocate(seq):
                break
            self.waiting.pop(0)
            seq.status = SequenceStatus.RUNNING
            bisect.insort(self.running, seq, key=self.order_key)
            n = min(seq.num_tokens - seq.num_computed_tokens, budget)
            out.seqs.append(seq)
            out.num_new_tokens.append(n)
            budget -= n
            if first is not None:
                first_blocks.add(first)
        return out

    def _preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.block_manager.deallocate(seq)
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.add(seq)

    def postprocess(self, batch: SchedulerOutput, sampled: list[int | None]) -> list[Sequence]:
        """Advance the batch after the model ran; returns sequences that got a token."""
        updated = []
        for seq, n, token in zip(batch.seqs, batch.num_new_tokens, sampled, strict=True):
            if seq.status != SequenceStatus.RUNNING:
                continue  # aborted while the step ran
            seq.num_computed_tokens += n
            self.block_manager.cache_computed_blocks(seq)
            if token is None:  # a prefill chunk that is not the last one
                continue
            seq.append_token(token)
            self.generation_tokens += 1
            updated.append(seq)
            params = seq.params
            if (
                not params.ignore_eos and token in self.eos_token_ids
            ) or token in params.stop_token_ids:
                self.finish(seq, "stop")
            elif (
                seq.num_completion_tokens >= params.max_tokens
                or seq.num_tokens >= self.max_model_len
            ):
                self.finish(seq, "length")
        return updated

    def finish(self, seq: Sequence, reason: str) -> None:
        """End a sequence (done, stopped or aborted) and free its blocks at once."""
        if seq.status == SequenceStatus.RUNNING:
            self.running.remove(seq)
            self.block_manager.deallocate(seq)
        elif seq.status == SequenceStatus.WAITING:
            self.waiting.remove(seq)
        seq.status = SequenceStatus.FINISHED
        seq.finish_reason = reason
        seq.finish_time = time.monotonic()

    def finish_all(self, reason: str) -> list[Sequence]:
        seqs = self.running + self.waiting
        for seq in seqs:
            self.finish(seq, reason)
        return seqs
