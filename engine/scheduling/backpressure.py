"""Backpressure: refuse a request at once when the waiting queue could not absorb it."""

from __future__ import annotations

from engine.config import EngineConfig
from engine.errors import EngineBusyError
from engine.sequence import Sequence

MAX_RETRY_AFTER_S = 60.0  # the longest and shortest wait a refusal asks for
MIN_RETRY_AFTER_S = 0.1
UNMEASURED_TOKENS_PER_S = 1000.0  # the rate assumed before any step was measured


def capacity_error(
    num_waiting: int,
    waiting_tokens: int,
    num_tokens: int,
    max_waiting_tokens: int,
    max_waiting_requests: int,
    tokens_per_s: float,
) -> EngineBusyError | None:
    """The EngineBusyError for a prompt of ``num_tokens`` that would overfill the queue.

    A pure function of numbers, so a caller's thread may check a published snapshot
    without touching the engine. An empty queue accepts any (valid) prompt.
    ``retry_after_s`` estimates when the excess will have been admitted, from the
    measured tokens per second.
    """
    excess = waiting_tokens + num_tokens - max_waiting_tokens
    if not num_waiting or (excess <= 0 and num_waiting < max_waiting_requests):
        return None
    excess = max(excess, waiting_tokens // num_waiting, 1)
    rate = tokens_per_s or UNMEASURED_TOKENS_PER_S
    retry = min(MAX_RETRY_AFTER_S, max(MIN_RETRY_AFTER_S, excess / rate))
    return EngineBusyError(
        f"the engine's waiting queue is full ({num_waiting} requests, "
        f"{waiting_tokens} tokens waiting); retry in {retry:.1f} s",
        retry_after_s=retry,
    )


def queue_delay_error(
    oldest_waiting_at: float | None, max_queue_delay_s: float, now: float
) -> EngineBusyError | None:
    """The EngineBusyError once the oldest waiting request has waited longer than
    ``max_queue_delay_s`` (0: no limit): measured queueing delay, as CoDel uses, so an
    overloaded engine refuses at once instead of admitting requests into a wait that
    grows without end (without it, the time to first token of an overloaded engine
    grew from milliseconds to seconds, refusing nobody). ``retry_after_s`` is that
    delay."""
    if not max_queue_delay_s or oldest_waiting_at is None:
        return None
    waited = now - oldest_waiting_at
    if waited <= max_queue_delay_s:
        return None
    return EngineBusyError(
        f"the engine is overloaded: requests have waited {waited:.1f} s to start "
        f"(max_queue_delay_s {max_queue_delay_s:g}); retry in {waited:.1f} s",
        retry_after_s=min(MAX_RETRY_AFTER_S, waited),
    )


def admission_error(
    waiting: list[Sequence],
    waiting_tokens: int,
    num_tokens: int,
    config: EngineConfig,
    tokens_per_s: float,
    now: float,
) -> EngineBusyError | None:
    """The refusal of a new prompt of ``num_tokens``, if any: the queue's delay past
    ``max_queue_delay_s`` first, else its size (``capacity_error``)."""
    error = capacity_error(
        len(waiting),
        waiting_tokens,
        num_tokens,
        config.max_waiting_tokens,
        config.max_waiting_requests,
        tokens_per_s,
    )
    oldest = min((seq.arrival_time for seq in waiting), default=None)
    return queue_delay_error(oldest, config.max_queue_delay_s, now) or error
