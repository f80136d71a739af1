"""Our own server events (`r1voice.*`), sent only to clients that asked for them: SDKs that
validate every event against OpenAI's schema report unknown ones as errors."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReasoningDelta(ServerEvent):
    """A piece of the model's thinking (R1's `<think>`): shown, never spoken."""

    TYPE = "r1voice.reasoning.delta"
    EXTENSION = True
    response_id: str
    item_id: str
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReasoningDone(ServerEvent):
    """The thinking ended; `cut`: the engine closed it at the session's budget (the model
    was stopped, it did not finish)."""

    TYPE = "r1voice.reasoning.done"
    EXTENSION = True
    response_id: str
    item_id: str
    cut: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnMetrics(ServerEvent):
    """A voice turn's latencies: seconds from the end of speech to each stage
    (`stage_seconds`, None where never reached; sent as `speech_stopped_to_<stage>_ms`),
    the answer's audio, how it ended, and the language the turn was heard in."""

    TYPE = "r1voice.turn.metrics"
    EXTENSION = True
    response_id: str
    stage_seconds: dict[str, float | None]
    audio_ms: float
    status: str
    language: str | None = None

    def fields(self) -> Wire:
        stages = {
            f"speech_stopped_to_{k}_ms": None if v is None else round(v * 1000, 1)
            for k, v in self.stage_seconds.items()
        }
        return {
            "response_id": self.response_id,
            **stages,
            "audio_ms": round(self.audio_ms, 1),
            "status": self.status,
            "language": self.language,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Interruption(ServerEvent):
    """Speech over an answer: it paused (`verdict` "wait"), or why it went on
    ("backchannel", "no_words") or stopped ("interrupt")."""

    TYPE = "r1voice.interruption"
    EXTENSION = True
    item_id: str
    verdict: str
