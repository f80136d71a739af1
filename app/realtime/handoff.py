"""What turns and responses both speak of: where server events go, and when a turn ended.

The turn coordinator hands a finished turn to an answer; both sides import these from
here, so neither package imports the other (session -> turns, session -> responses).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.protocol.server_events import ServerEvent

EventSink = Callable[[ServerEvent], None]  # where server events go (the session's Outbox)


@dataclass
class TurnTiming:
    """When the spoken turn an answer replies to ended, and when its transcript was ready."""

    speech_stopped_at: float
    transcript_at: float | None = None
    language: str | None = None  # what the final transcript was heard as ("zh")

    def stage_seconds(self, **marks: float | None) -> dict[str, float | None]:
        """The latency breakdown of a voice turn: seconds from the end of speech to the
        transcript and to each of `marks` (clock readings, None where never reached)."""
        stages = {"transcript": self.transcript_at, **marks}
        return {k: None if v is None else v - self.speech_stopped_at for k, v in stages.items()}
