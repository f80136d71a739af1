"""One turn's spans while it is open: the turn itself and the stages still running."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Tracer


@dataclass(eq=False)
class Turn:
    """Turn `number` of a session: the user's speech (or a commit, a nudge), the decision
    that it ended, and the answers to it. `end_reason`: vad, semantic, manual or idle."""

    number: int
    span: Span
    end_reason: str | None = None
    speech: Span | None = None  # the user's speech, while it lasts
    decision: Span | None = None  # speech stopped -> committed (VAD or the turn model)
    playback: Span | None = None  # the answer's audio going out
    barge_in: Span | None = None  # speech over the answer: paused until a verdict
    item_id: str | None = None
    committed: bool = False
    interrupted: bool = False
    played: bool = False
    responses: set[str] = field(default_factory=set)  # running now
    answered_by: set[str] = field(default_factory=set)  # every response it started

    @property
    def answered(self) -> bool:
        return bool(self.answered_by)

    def child(self, tracer: Tracer, name: str, start_ns: int, attributes: dict[str, Any]) -> Span:
        context = trace.set_span_in_context(self.span)
        return tracer.start_span(name, context=context, start_time=start_ns, attributes=attributes)

    def end_barge_in(self, outcome: str | None) -> None:
        if self.barge_in is None:
            return
        if outcome is not None:
            self.barge_in.set_attribute("r1voice.barge_in.outcome", outcome)
        self.barge_in.end()
        self.barge_in = None

    def end(self) -> None:
        for stage in (self.speech, self.decision, self.playback):
            if stage is not None:
                stage.end()
        self.end_barge_in("cancel" if self.interrupted else None)
        self.span.set_attribute("r1voice.turn.was_interrupted", self.interrupted)
        self.span.set_attribute("r1voice.turn.end_reason", self.end_reason or "none")
        self.span.set_attribute("r1voice.turn.answered", self.answered)
        self.span.end()


class OpenTurns:
    """A session's open turns, oldest first (an answered one stays open while the next is
    spoken), and which turn each response answers."""

    def __init__(self, tracer: Tracer, session: Span) -> None:
        self.tracer = tracer
        self.context = trace.set_span_in_context(session)
        self.open: list[Turn] = []
        self.by_response: dict[str, Turn] = {}
        self.number = 0  # turns opened so far

    def start(self, end_reason: str | None) -> Turn:
        self.number += 1
        attributes = {"r1voice.turn.number": self.number}
        span = self.tracer.start_span("r1voice.turn", context=self.context, attributes=attributes)
        turn = Turn(self.number, span, end_reason)
        self.open.append(turn)
        return turn

    def end(self, turn: Turn) -> None:
        if turn not in self.open:
            return
        self.open.remove(turn)
        for response_id in turn.responses:
            self.by_response.pop(response_id, None)
        turn.end()

    def speaking(self) -> Turn | None:
        return next((t for t in reversed(self.open) if t.speech is not None), None)

    def deciding(self) -> Turn | None:
        return next((t for t in reversed(self.open) if t.decision is not None), None)

    def newest_unanswered(self) -> Turn | None:
        newest = self.open[-1] if self.open else None
        return newest if newest is not None and not newest.answered else None

    def answering(self) -> Turn | None:
        """The newest turn with a response running (its TTS, barge-ins)."""
        return next((t for t in reversed(self.open) if t.responses), None)

    def by_id(self, response_id: str) -> Turn | None:
        return next((t for t in self.open if response_id in t.answered_by), None)
