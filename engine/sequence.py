"""Sequence: one request's tokens, state, KV block table, priority and timings."""

from __future__ import annotations

import itertools
import time
from enum import Enum, auto

import torch

from engine.reasoning_budget import ReasoningBudget
from engine.request_times import RequestTimes
from engine.sampling_params import SamplingParams
from engine.spec_state import SpecState


class SequenceStatus(Enum):
    WAITING = auto()
    RUNNING = auto()
    FINISHED = auto()


DEFAULT_PRIORITY_TOKENS = 128  # default priority: one level per this many prompt tokens


def default_priority(num_prompt_tokens: int) -> int:
    """The priority of a request that names none: short prompts first (0 for the
    shortest, below DEFAULT_PRIORITY_TOKENS)."""
    return num_prompt_tokens // DEFAULT_PRIORITY_TOKENS


class Sequence:
    """A request as the scheduler sees it.

    ``priority`` (lower runs first) is the caller's integer, or when None the default
    ``default_priority(len(prompt))``.

    ``num_computed_tokens`` counts tokens whose KV is in the cache; the next step
    computes ``token_ids[num_computed_tokens:]`` (a chunk of them under the budget).
    A decode is the case where exactly one token is left to compute.
    """

    _ids = itertools.count()

    def __init__(
        self,
        token_ids: list[int],
        params: SamplingParams,
        request_id: str | None = None,
        priority: int | None = 0,
        arrival_time: float | None = None,
        cache_salt: str | None = None,
    ) -> None:
        self.seq_id = next(Sequence._ids)
        self.request_id = request_id if request_id is not None else f"seq-{self.seq_id}"
        self.token_ids = list(token_ids)
        self.num_prompt_tokens = len(token_ids)
        self.params = params
        self.priority = priority if priority is not None else default_priority(len(token_ids))
        self.cache_salt = cache_salt  # prefix-cache namespace: different salts never share
        self.cluster_id: int | None = None  # semantic cluster (engine.scheduling.clustering)
        self.arrival_time = time.monotonic() if arrival_time is None else arrival_time
        self.first_scheduled_time: float | None = None  # its first step (vLLM's queue end)
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None
        self.status = SequenceStatus.WAITING
        self.block_table: list[int] = []
        self.block_hashes: list[int] = []  # chained hashes of the full, computed blocks
        self.num_computed_tokens = 0
        self.num_cached_tokens = 0  # prompt tokens served from the prefix cache
        self.num_preemptions = 0
        self.num_skips = 0  # times passed over by a cache-aware pick (bounded)
        self.finish_reason: str | None = None
        self.output_text = ""
        self.generator: torch.Generator | None = None  # set by the engine for seeded sampling
        self.reasoning: ReasoningBudget | None = None  # set by the engine for a thinking budget
        self.spec: SpecState | None = None  # set by the Speculator once it drafts for it

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_completion_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def prompt_token_ids(self) -> list[int]:
        return self.token_ids[: self.num_prompt_tokens]

    @property
    def completion_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def is_finished(self) -> bool:
        return self.status == SequenceStatus.FINISHED

    def steer(self, sampled: int) -> int:
        """The token to append for a sampled one (a thinking budget may replace it)."""
        return sampled if self.reasoning is None else self.reasoning.steer(sampled)

    @property
    def reasoning_cut(self) -> bool:
        """Whether the engine ended this sequence's thinking at its budget."""
        return self.reasoning is not None and self.reasoning.cut

    def scheduled(self, now: float) -> None:
        """The scheduler put it in a step (the first time ends its time in the queue;
        a preempted sequence's return does not)."""
        if self.first_scheduled_time is None:
            self.first_scheduled_time = now

    def times(self) -> RequestTimes | None:
        """Its phases so far; None before its first token."""
        scheduled, first, last = (
            self.first_scheduled_time,
            self.first_token_time,
            self.last_token_time,
        )
        if scheduled is None or first is None or last is None:
            return None
        return RequestTimes(
            queue_s=scheduled - self.arrival_time,
            prefill_s=first - scheduled,
            decode_s=last - first,
        )

    def append_token(self, token_id: int, at: float | None = None) -> None:
        """A new token (`at`: when it was made, `time.monotonic()`; None: not timed)."""
        if at is not None:
            self.last_token_time = at
            if self.first_token_time is None:
                self.first_token_time = at
        self.token_ids.append(token_id)
