"""StatsSnapshot: what the engine thread publishes for other threads to read."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from engine.config import EngineConfig
from engine.errors import EngineBusyError
from engine.scheduling.backpressure import capacity_error, queue_delay_error
from engine.stats.engine_stats import EngineStats
from engine.stats.step_clock import ClockReading


@dataclass(frozen=True)
class StatsSnapshot:
    """Immutable: the engine thread replaces it whole (one reference assignment) after
    every step and command; any thread reads it without touching the engine."""

    stats: EngineStats
    reading: ClockReading
    tokens_per_s: float

    def current(self) -> EngineStats:
        """The stats as of the snapshot, with wall-time shares running to now."""
        shares = self.reading.shares(time.monotonic())
        return dataclasses.replace(
            self.stats,
            busy_share=shares["busy"],
            idle_waiting_share=shares["stalled"],
            idle_empty_share=shares["idle"],
        )

    def capacity_error(self, num_tokens: int, config: EngineConfig) -> EngineBusyError | None:
        """Backpressure on the snapshot (see engine.scheduling.backpressure)."""
        delay = queue_delay_error(
            self.stats.oldest_waiting_at, config.max_queue_delay_s, time.monotonic()
        )
        return delay or capacity_error(
            self.stats.num_waiting,
            self.stats.waiting_tokens,
            num_tokens,
            config.max_waiting_tokens,
            config.max_waiting_requests,
            self.tokens_per_s,
        )
