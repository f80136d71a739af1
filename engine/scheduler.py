"""Scheduler: picks each step's work under the token budget and the KV pool."""

from __future__ import annotations

import bisect
from time import monotonic

from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.scheduling.cache_aware_pick import PICK_WINDOW, cache_aware_pick, pending_blocks
from engine.scheduling.cluster_demand import ClusterDemand
from engine.scheduling.policy import SchedulingPolicy
from engine.scheduling.scheduler_output import Sampled, SchedulerOutput
from engine.scheduling.step_budget import StepBudget, step_budget
from engine.scheduling.step_cost_model import StepCostModel
from engine.sequence import Sequence, SequenceStatus
from engine.speculator import Speculator

__all__ = ["Sampled", "Scheduler", "SchedulerOutput"]


class Scheduler:
    """Iteration-level scheduling with chunked prefill and preemption by recompute.

    Each step: running sequences first (decodes, and prefills cut short by the budget
    last step), then waiting ones in queue order while tokens, sequence slots and KV
    blocks last; the first that does not fit stops admission (no overtaking, so the
    policy's queue order is a promise). When a running sequence needs a block and the pool is
    empty, the last running one in queue order is preempted: its blocks are freed
    (their prefix hashes stay cached, so resuming re-hits them) and it waits again.

    The queue order, the high-priority reserve and static batches are the policy's
    (``SchedulingPolicy``, engine.scheduling.policy). Admission is cache-aware
    (engine.scheduling.cache_aware_pick: a bounded delay), each step's prefill chunks
    are cut to its time budget (``StepBudget``), and with prompt clustering on the KV
    pool evicts the blocks of unwanted clusters first (``ClusterDemand``).
    """

    def __init__(
        self,
        config: EngineConfig,
        block_manager: BlockManager,
        max_model_len: int,
        eos_token_ids: set[int] | None = None,
    ):
        self.config = config
        self.block_manager = block_manager
        self.max_model_len = max_model_len
        self.policy = SchedulingPolicy(config)
        self.waiting: list[Sequence] = []  # kept sorted by policy.order_key
        self.running: list[Sequence] = []  # kept sorted by policy.order_key
        self.waiting_tokens = 0  # prompt tokens (and recomputed tokens) waiting
        self.eos_token_ids: set[int] = set(eos_token_ids or ())
        self.generation_tokens = 0
        self.num_preemptions = 0
        self.prefill_tokens = 0  # tokens computed other than single-token decodes
        self.last_cluster: int | None = None
        self.demand = ClusterDemand()
        self.cost_model = StepCostModel()  # fitted by the engine after each step
        self.latency_sensitive = False  # "latency" mode: bound every step while set
        self.reserve_blocks, self.reserve_tokens = self.policy.reserve(block_manager.num_blocks)
        self.speculator = Speculator.of(config)  # None: speculation off

    def reconfigured(self, config: EngineConfig) -> Scheduler:
        """A scheduler for new scheduling fields (nothing may be live). What outlives a
        policy carries over: the EOS ids, the fitted cost model (the machine is the same)
        and the latency-sensitive flag; the counters start again."""
        assert not self.has_unfinished()
        scheduler = Scheduler(config, self.block_manager, self.max_model_len, self.eos_token_ids)
        scheduler.cost_model = self.cost_model
        scheduler.latency_sensitive = self.latency_sensitive
        return scheduler

    def set_latency_sensitive(self, on: bool) -> None:
        """While on, "latency" step-budget mode bounds every step (see _step_budget)."""
        self.latency_sensitive = on

    def reset_stats(self) -> None:
        self.generation_tokens = self.num_preemptions = self.prefill_tokens = 0
        if self.speculator is not None:
            self.speculator.reset_stats()

    def add(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        bisect.insort(self.waiting, seq, key=self.policy.order_key)
        self.waiting_tokens += seq.num_tokens

    def _pop_waiting(self, seq: Sequence) -> None:
        self.waiting.remove(seq)
        self.waiting_tokens -= seq.num_tokens

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        clustered = self.config.semantic_clustering
        self.block_manager.set_cluster_demand(self.demand.of(self.waiting) if clustered else {})
        if self.policy.name == "priority":  # room now for high-priority requests
            for victim in self.policy.high_priority_victims(
                self.waiting, self.running, self.block_manager
            ):
                self._preempt(victim)
                out.num_preempted += 1
        budget = self.config.max_num_batched_tokens
        low_budget = budget - self.reserve_tokens  # what work outside the reserve may use
        high_pending = self.policy.high_prefill_pending(self.waiting, self.running)
        if self.reserve_tokens and high_pending:
            # A step that prefills high-priority work is kept short: the rest gets only
            # the reserve's share, so a short request's first token is not stuck
            # behind a long prompt's big chunk.
            low_budget = self.reserve_tokens
        timer = self._step_budget(high_pending)
        spec_room = 0
        if self.speculator is not None:  # off: no walk over the running batch each step
            planned = sum(s.num_tokens - s.num_computed_tokens for s in self.running)
            spec_room = self.speculator.room(planned + self.waiting_tokens)
        kv_pressure = False
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            high = self.policy.is_high(seq)
            n = min(seq.num_tokens - seq.num_computed_tokens, budget)
            if not high and n > 1:  # a prefill chunk: keep out of the reserve
                n = min(n, low_budget)
            n = timer.cap(n, seq.num_computed_tokens, high) if n > 1 else n
            if n <= 0:
                i += 1
                continue
            if n == 1 and seq.num_computed_tokens + 1 == seq.num_tokens and self.speculator:
                # Drafts to verify; their slots never take blocks others need this step.
                spare = self.block_manager.num_free_blocks - len(self.running) - self.reserve_blocks
                room = min(spec_room, budget - 1)
                drafts = self.speculator.propose(seq, room, self.max_model_len, spare)
                if drafts:
                    out.drafts[len(out.seqs)] = drafts
                    if seq.spec is not None and seq.spec.source == "draft":
                        out.model_drafts.add(len(out.seqs))
                n, spec_room = n + len(drafts), spec_room - len(drafts)
            while not self.block_manager.ensure_slots(seq, seq.num_computed_tokens + n):
                self._preempt(self.running[-1])  # not yet scheduled: it sorts after seq
                out.num_preempted += 1
                kv_pressure = True
                if seq.status != SequenceStatus.RUNNING:
                    break
            else:
                out.seqs.append(seq)
                out.num_new_tokens.append(n)
                timer.add(n, seq.num_computed_tokens)
                budget -= n
                low_budget -= 0 if high else n
                i += 1
        if kv_pressure or not self.policy.may_admit(self.waiting, self.running):
            return self._close(out, timer)
        # Blocks being computed by running prefills: a request that needs one next (a
        # shared system prompt or document) waits and then reuses that KV.
        pending = pending_blocks(self.block_manager, self.running)  # hash -> priority
        high_only = False  # the reserve is all that is left: high-priority requests only
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            picked = cache_aware_pick(
                self.waiting,
                block_manager=self.block_manager,
                policy=self.policy.name,
                cache_aware=self.config.cache_aware_scheduling,
                is_high=self.policy.is_high,
                last_cluster=self.last_cluster,
                pending_blocks=pending,
                high_only=high_only,
            )
            if picked is None:
                break
            seq = picked
            high = self.policy.is_high(seq)
            reserve = 0 if high or not self.running else self.reserve_blocks
            cached = self.block_manager.num_cached_tokens(seq)
            left = min(seq.num_tokens - cached, budget if high else low_budget)
            if left > 0 and timer.cap(left, cached, high) <= 0:
                break  # the step's time is spent: admit nobody else now
            if (not high and low_budget <= 0) or not self.block_manager.allocate(seq, reserve):
                if high or self.policy.name != "priority":
                    break
                # Work outside the reserve is full; the reserve may still take those it
                # is for, queued behind this one (they cannot delay it: it may not use it).
                high_only = True
                continue
            self._pop_waiting(seq)
            seq.status = SequenceStatus.RUNNING
            seq.scheduled(monotonic())
            bisect.insort(self.running, seq, key=self.policy.order_key)
            n = min(seq.num_tokens - seq.num_computed_tokens, budget if high else low_budget)
            n = timer.cap(n, seq.num_computed_tokens, high)
            out.seqs.append(seq)
            out.num_new_tokens.append(n)
            timer.add(n, seq.num_computed_tokens)
            budget -= n
            low_budget -= 0 if high else n
            pending = pending_blocks(self.block_manager, [seq], pending)
            if seq.cluster_id is not None:
                self.last_cluster = seq.cluster_id
        return self._close(out, timer)

    def _step_budget(self, high_pending: bool) -> StepBudget:
        """This step's time budget (engine.scheduling.step_budget.step_budget)."""
        mode_on = self.config.step_budget_mode == "always" or self.latency_sensitive
        limit = None if self.policy.name == "static" else self.config.max_step_ms
        head = self.waiting[:PICK_WINDOW] if high_pending else []
        queued = [s.num_tokens - s.num_computed_tokens for s in head if self.policy.is_high(s)]
        return step_budget(self.cost_model, limit, mode_on or high_pending, queued)

    @staticmethod
    def _close(out: SchedulerOutput, timer: StepBudget) -> SchedulerOutput:
        out.work, out.predicted_ms, out.bounded = timer.work, timer.predicted_ms, timer.bounded
        return out

    def _preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.block_manager.deallocate(seq)
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.add(seq)

    def postprocess(self, batch: SchedulerOutput, sampled: list[Sampled]) -> list[Sequence]:
        """Advance the batch after the model ran; returns sequences that got a token."""
        updated = []
        now = monotonic()
        for i, (seq, n, got) in enumerate(
            zip(batch.seqs, batch.num_new_tokens, sampled, strict=True)
        ):
            if seq.status != SequenceStatus.RUNNING:
                continue  # aborted while the step ran
            drafts = batch.drafts.get(i)
            if drafts and self.speculator is not None and isinstance(got, list):
                tokens, n = self.speculator.accept(seq, drafts, got), 1
            else:
                tokens = [] if got is None else [got] if isinstance(got, int) else got
            if n > 1 or seq.num_completion_tokens == 0:
                self.prefill_tokens += n
            seq.num_computed_tokens += n
            self.block_manager.cache_computed_blocks(seq)
            if tokens:
                self._append(seq, tokens, now)
                updated.append(seq)
        return updated

    def _append(self, seq: Sequence, tokens: list[int], now: float) -> None:
        """Append a step's tokens (more than one: accepted drafts and the target's next),
        each judged for a stop as decoding one at a time would, then free the blocks
        that only rejected drafts used."""
        for i, token in enumerate(tokens):
            if i:  # the draft at this position was right: its KV stands
                seq.num_computed_tokens += 1
                self.block_manager.cache_computed_blocks(seq)
            steered = seq.steer(token)
            seq.append_token(steered, now)
            self.generation_tokens += 1
            reason = self._token_stop(seq, steered)
            if reason is not None:
                self.finish(seq, reason)
                return
            if steered != token:
                break  # the thinking budget replaced it: the drafts after it are moot
        self.block_manager.trim(seq)

    def _token_stop(self, seq: Sequence, token: int) -> str | None:
        """Does the sequence's newest token end it? ("stop": an EOS or stop token id;
        "length": max_tokens or the context is reached.) Stop strings are found in the
        text by the OutputProcessor, which reports them to ``finish``."""
        params = seq.params
        eos = not params.ignore_eos and token in self.eos_token_ids
        if eos or token in params.stop_token_ids:
            return "stop"
        if seq.num_completion_tokens >= params.max_tokens or seq.num_tokens >= self.max_model_len:
            return "length"
        return None

    def finish(self, seq: Sequence, reason: str) -> None:
        """End a sequence and free its blocks at once: the one place a sequence ends.

        ``reason``: "stop", "length", "abort" or "error". A sequence that has already
        ended keeps its reason, unless the new one is "error" (its text is short).
        """
        if seq.is_finished:
            if reason == "error":
                seq.finish_reason = reason
            return
        if seq.status == SequenceStatus.RUNNING:
            self.running.remove(seq)
            self.block_manager.deallocate(seq)
        elif seq.status == SequenceStatus.WAITING:
            self._pop_waiting(seq)
        seq.status = SequenceStatus.FINISHED
        seq.finish_reason = reason
        self.demand.finished(seq)

    def finish_all(self, reason: str) -> list[Sequence]:
        seqs = self.running + self.waiting
        for seq in seqs:
            self.finish(seq, reason)
        return seqs
