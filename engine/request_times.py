"""RequestTimes: a finished request's phases, as vLLM's request histograms split them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestTimes:
    """Seconds in each phase: `queue_s` arrival -> its first step, `prefill_s` -> its first
    token, `decode_s` -> its last token (a preempted request's recompute falls in the phase
    it interrupted)."""

    queue_s: float
    prefill_s: float
    decode_s: float

    @property
    def inference_s(self) -> float:
        """Its first step to its last token (vLLM's time in RUNNING)."""
        return self.prefill_s + self.decode_s
