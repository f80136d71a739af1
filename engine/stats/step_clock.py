"""StepClock: where the engine's wall time goes, and how fast its steps compute tokens."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.scheduling.scheduler_output import SchedulerOutput

STATES = ("busy", "stalled", "idle")


@dataclass
class StepTimes:
    """Measured step times (ms) since the last reset, and the cost model's accuracy."""

    last_ms: float = 0.0
    last_predicted_ms: float = 0.0
    max_ms: float = 0.0
    count: int = 0
    over_limit: int = 0  # bounded steps that ran past max_step_ms anyway
    prediction_error: float = 0.0  # moving mean of |measured - predicted| / measured


@dataclass(frozen=True)
class ClockReading:
    """An immutable copy of the clock; any thread may turn it into shares of wall time."""

    start: float
    mark_time: float
    state: str
    state_time: dict[str, float] = field(default_factory=dict)
    steps: StepTimes = field(default_factory=lambda: StepTimes())

    def shares(self, now: float) -> dict[str, float]:
        """Share of wall time since ``start`` in each state, the open interval included."""
        wall = max(now - self.start, 1e-9)
        open_interval = max(now - self.mark_time, 0.0)
        return {
            s: (self.state_time[s] + (open_interval if s == self.state else 0.0)) / wall
            for s in STATES
        }


class StepClock:
    """Charges wall time to a state and keeps a moving average of tokens per second.

    busy: a batch runs; stalled: requests wait but nothing is scheduled (a static
    batch filling up, or no room); idle: nothing to do at all. Only the engine thread
    calls the mutating methods; other threads read a ``ClockReading``.
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.tokens_per_s = 0.0  # moving average of tokens computed per second of step
        self.reset()

    def reset(self) -> None:
        self.steps = StepTimes()
        self._start = self._mark_time = self.now()
        self._state = "idle"
        self._state_time = dict.fromkeys(STATES, 0.0)

    @property
    def state(self) -> str:
        return self._state

    def mark(self, state: str) -> None:
        """Close the current interval, charge it to its state, start ``state``."""
        now = self.now()
        self._state_time[self._state] += now - self._mark_time
        self._state, self._mark_time = state, now

    def record_step(self, batch: SchedulerOutput, seconds: float, limit_ms: float | None) -> None:
        """A step ran ``batch`` in ``seconds``: rates, and measured vs predicted time."""
        rate = sum(batch.num_new_tokens) / max(seconds, 1e-6)
        old = self.tokens_per_s
        self.tokens_per_s = rate if not old else 0.8 * old + 0.2 * rate
        ms = 1000 * seconds
        self.steps.last_ms, self.steps.last_predicted_ms = ms, batch.predicted_ms
        self.steps.max_ms = max(self.steps.max_ms, ms)
        self.steps.count += 1
        if batch.bounded and limit_ms is not None and ms > limit_ms:
            self.steps.over_limit += 1
        # mean absolute prediction error, relative: how far to trust the budget
        err = abs(ms - batch.predicted_ms) / max(ms, 1e-3)
        self.steps.prediction_error = 0.9 * self.steps.prediction_error + 0.1 * err

    def reading(self) -> ClockReading:
        return ClockReading(
            self._start,
            self._mark_time,
            self._state,
            dict(self._state_time),
            dataclasses.replace(self.steps),
        )
