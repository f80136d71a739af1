"""StepBudget: one step's time budget, spent chunk by chunk while the step is built."""

from __future__ import annotations

from engine.scheduling.step_cost_model import StepCostModel, StepWork

MIN_CHUNK = 32  # a prefill chunk the time budget never cuts below: progress is certain
# Of a step's time limit, what work outside the reserve keeps however much
# high-priority prefill is queued: it slows down, never stops.
MIN_LOW_SHARE = 0.2


class StepBudget:
    """Caps prefill chunks so that the predicted step time stays under a limit.

    ``limit_ms`` None: unbounded (the token budget alone decides). High-priority chunks
    may use the whole limit; others only ``low_limit_ms``, what the high-priority
    prefills waiting to be admitted in this step leave. Decodes are never cut (one
    token each) and the first prefill chunk of a step, and any high-priority one, get
    at least ``MIN_CHUNK`` tokens, so a tight limit slows work down but never stops it.
    """

    def __init__(
        self, model: StepCostModel, limit_ms: float | None, low_limit_ms: float | None = None
    ) -> None:
        self.model = model
        self.limit_ms = limit_ms
        self.low_limit_ms = limit_ms if low_limit_ms is None else low_limit_ms
        self.work = StepWork()
        self.has_prefill = False

    @property
    def bounded(self) -> bool:
        return self.limit_ms is not None

    def cap(self, n: int, start: int, high: bool) -> int:
        """How many of a chunk's ``n`` tokens (after ``start`` cached) fit this step."""
        if n <= 1 or self.limit_ms is None:
            return n
        limit = self.limit_ms if high else self.low_limit_ms
        assert limit is not None
        fits = self.model.max_chunk(self.work, start, limit, n)
        if high or not self.has_prefill:
            fits = max(fits, min(n, MIN_CHUNK))
        return fits

    def add(self, n: int, start: int) -> None:
        """Charge a scheduled chunk (a decode: n = 1) to this step."""
        self.work = self.work.plus_chunk(n, start)
        self.has_prefill = self.has_prefill or n > 1

    @property
    def predicted_ms(self) -> float:
        return self.model.predict(self.work)


def step_budget(
    model: StepCostModel, limit_ms: float | None, on: bool, queued_high: list[int]
) -> StepBudget:
    """A step's budget: unbounded without a limit or while not ``on``; else the limit,
    of which work outside the reserve gets what the high-priority prefills queued
    (their tokens, ``queued_high``) leave, and never less than MIN_LOW_SHARE of it."""
    if limit_ms is None or not on:
        return StepBudget(model, None)
    queued = StepWork()
    for n in queued_high:
        queued = queued.plus_chunk(n, 0)
    reserved = model.predict(queued) - model.predict(StepWork())
    reserved *= model.safety  # as max_chunk scales what it predicts
    return StepBudget(model, limit_ms, max(limit_ms - reserved, MIN_LOW_SHARE * limit_ms))
