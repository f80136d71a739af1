"""One session's trace: the session span, a span per turn, and its stages inside it.

The turn structure is read off the session's own server events (the Outbox shows each
one here before it is serialized): speech started/stopped, committed, transcribed,
responses created and done, barge-in verdicts, function calls. Model calls are seen
through wrappers (traced_models.py) that open their spans under the turn they serve.
Every span is opened with this session's explicit parent, never the ambient current
span, so concurrent sessions (one asyncio loop, many tasks) never cross.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span, Tracer

from app.protocol.server_events import (
    AudioDelta,
    AudioTranscriptDone,
    InputAudioCommitted,
    InputAudioTimeoutTriggered,
    Interruption,
    ResponseDone,
    ServerEvent,
    SessionCreated,
    SessionUpdated,
    SpeechStarted,
    SpeechStopped,
    TranscriptionCompleted,
    TurnMetrics,
)
from app.recording import RecordingStore
from app.telemetry.reports import SessionReports
from app.telemetry.session_trace import SessionTrace
from app.telemetry.tool_spans import ToolSpans
from app.telemetry.turn import OpenTurns

log = logging.getLogger("r1voice.telemetry")
Attributes = dict[str, Any]
DETECTION_REASONS = {"server_vad": "vad", "semantic_vad": "semantic"}


class TracedSession(SessionTrace):
    """Tracing on: spans go to `tracer`; `content` adds transcripts, answers and tool data."""

    enabled = True

    def __init__(
        self,
        tracer: Tracer,
        content: bool,
        reports: SessionReports | None = None,
        parent: Any = None,
        recordings: RecordingStore | None = None,
        recording_max_s: float = 3600.0,
    ) -> None:
        super().__init__(reports, recordings, recording_max_s)
        self.tracer, self.content = tracer, content
        # a trace of its own (or the one it joins): never the ambient current span
        self.span = tracer.start_span("r1voice.session", context=parent or Context())
        self.turns = OpenTurns(tracer, self.span)
        self.tools = ToolSpans(tracer, content, self._turn_span)
        self._detection = "vad"
        self._idle_next = False

    # -- the session ------------------------------------------------------------------

    def start(self, session_id: str) -> None:
        super().start(session_id)
        self.id = session_id
        self.span.set_attribute("r1voice.session.id", session_id)
        self.span.set_attribute("gen_ai.conversation.id", session_id)
        if self.reports is not None:
            self.reports.open(session_id, self.span.get_span_context().trace_id)

    def configure(self, tracing: Any) -> None:
        if tracing is None:
            return
        if tracing == "auto":
            self.span.set_attribute("r1voice.tracing", "auto")
            return
        for key in ("workflow_name", "group_id"):
            value = getattr(tracing, key, None)
            if value is not None:
                self.span.set_attribute(f"r1voice.tracing.{key}", value)
        for key, value in (getattr(tracing, "metadata", None) or {}).items():
            self.span.set_attribute(f"r1voice.tracing.metadata.{key}", str(value))

    def close(self, items: list[dict[str, Any]]) -> None:
        for turn in list(self.turns.open):
            self.turns.end(turn)
        self.tools.close()
        self.span.set_attribute("r1voice.session.turns", self.turns.number)
        self.span.set_attribute("r1voice.session.items", len(items))
        self.span.end()
        super().close(items)

    # -- spans the model wrappers open --------------------------------------------------

    def stage(self, name: str, start_ns: int, attributes: Attributes, of: str = "answer") -> Span:
        if of == "speech":
            turn = self.turns.open[-1] if self.turns.open else None
        elif of == "answer":
            turn = self.turns.answering()
        else:
            turn = self.turns.by_response.get(of)
        turn = turn or self.turns.start(self._reason_without_speech())
        return turn.child(self.tracer, name, start_ns, attributes)

    def request_turn(self, request_id: str) -> None:
        turn = self.turns.newest_unanswered() or self.turns.start(self._reason_without_speech())
        turn.responses.add(request_id)
        turn.answered_by.add(request_id)
        self.turns.by_response[request_id] = turn

    # -- the events ---------------------------------------------------------------------

    def event(self, event: ServerEvent) -> None:
        super().event(event)
        handler = _HANDLERS.get(type(event))
        try:
            self.tools.event(event)
            if handler is not None:
                handler(self, event)
        except Exception:  # a bug of the trace's must not end the conversation
            log.exception("tracing failed on %s", event.TYPE)

    def _session(self, event: SessionCreated | SessionUpdated) -> None:
        session = event.session
        detection = session.get("turn_detection", session.get("audio", {}).get("input", {}))
        if isinstance(detection, dict) and "turn_detection" in detection:
            detection = detection["turn_detection"]
        kind = detection.get("type") if isinstance(detection, dict) else None
        self._detection = DETECTION_REASONS.get(str(kind), "manual")

    def _speech_started(self, event: SpeechStarted) -> None:
        newest = self.turns.open[-1] if self.turns.open else None
        if newest is not None and newest.speech is not None:
            return  # the same speech, seen again
        turn = self.turns.start(None)
        turn.speech = turn.child(self.tracer, "r1voice.user_speech", _now(), {})
        turn.span.set_attribute("r1voice.turn.audio_start_ms", event.audio_start_ms)

    def _speech_stopped(self, event: SpeechStopped) -> None:
        turn = self.turns.speaking()
        if turn is None or turn.speech is None:
            return
        turn.speech.set_attribute("r1voice.audio_end_ms", event.audio_end_ms)
        turn.speech.end()
        turn.speech = None
        turn.decision = turn.child(
            self.tracer, "r1voice.vad", _now(), {"r1voice.vad.detection": self._detection}
        )

    def _committed(self, event: InputAudioCommitted) -> None:
        turn = self.turns.speaking() or self.turns.deciding()
        if turn is None:
            turn = self.turns.start("idle" if self._idle_next else "manual")
        elif turn.decision is not None:
            turn.end_reason = turn.end_reason or self._detection
            turn.decision.set_attribute("r1voice.turn.end_reason", turn.end_reason)
            turn.decision.end()
            turn.decision = None
        else:  # committed while speaking: the client's input_audio_buffer.commit
            turn.end_reason = "manual"
            if turn.speech is not None:
                turn.speech.end()
                turn.speech = None
        self._idle_next = False
        turn.span.set_attribute("r1voice.turn.user_item", event.item_id)
        turn.item_id = event.item_id
        turn.committed = True

    def _timeout(self, _event: InputAudioTimeoutTriggered) -> None:
        self._idle_next = True

    def _transcribed(self, event: TranscriptionCompleted) -> None:
        turn = next((t for t in self.turns.open if t.item_id == event.item_id), None)
        if turn is not None and self.content:
            turn.span.set_attribute("r1voice.transcript", event.transcript)

    def _response_done(self, event: ResponseDone) -> None:
        response = event.response
        turn = self.turns.by_response.pop(response.get("id", ""), None)
        if turn is None:
            return
        status = response.get("status", "")
        reason = (response.get("status_details") or {}).get("reason")
        interrupted = status == "cancelled" and reason == "turn_detected"
        turn.interrupted = turn.interrupted or interrupted
        turn.span.set_attribute("r1voice.response.status", status)
        for item in response.get("output") or []:  # ids only: the report's items hold the words
            if item.get("type") == "message":
                turn.span.set_attribute("r1voice.turn.answer_item", str(item.get("id")))
        turn.end_barge_in("cancel" if interrupted else None)
        if turn.playback is not None:
            turn.playback.end()
            turn.playback = None
        turn.responses.clear()  # a discarded early answer of this turn never says done
        # after the events this same step still emits (r1voice.turn.metrics)
        asyncio.get_running_loop().call_soon(self.turns.end, turn)

    def _metrics(self, event: TurnMetrics) -> None:
        turn = self.turns.by_id(event.response_id)
        if turn is None:
            return
        for stage, seconds in event.stage_seconds.items():
            if seconds is not None:
                turn.span.set_attribute(f"r1voice.turn.to_{stage}_ms", round(seconds * 1000, 1))
        turn.span.set_attribute("r1voice.turn.audio_ms", round(event.audio_ms, 1))

    def _audio(self, event: AudioDelta) -> None:
        turn = self.turns.by_response.get(event.response_id)
        if turn is not None and turn.playback is None and not turn.played:
            turn.played = True
            turn.playback = turn.child(self.tracer, "r1voice.playback", _now(), {})

    def _answer_text(self, event: AudioTranscriptDone) -> None:
        turn = self.turns.by_response.get(event.response_id)
        if turn is not None and self.content:
            turn.span.set_attribute("r1voice.answer", event.transcript)

    def _interruption(self, event: Interruption) -> None:
        turn = self.turns.answering()
        if turn is None:
            return
        if event.verdict == "wait":
            if turn.barge_in is None:
                turn.barge_in = turn.child(self.tracer, "r1voice.barge_in", _now(), {})
        else:
            turn.end_barge_in("cancel" if event.verdict == "interrupt" else "resume")

    def _turn_span(self, response_id: str | None) -> Span:
        turn = self.turns.by_response.get(response_id or "")
        return turn.span if turn is not None else self.span

    # -- turns ----------------------------------------------------------------------------

    def _reason_without_speech(self) -> str:
        return "idle" if self._idle_next else "manual"


def _now() -> int:
    return time.time_ns()


_HANDLERS: dict[type, Any] = {
    SessionCreated: TracedSession._session,
    SessionUpdated: TracedSession._session,
    SpeechStarted: TracedSession._speech_started,
    SpeechStopped: TracedSession._speech_stopped,
    InputAudioCommitted: TracedSession._committed,
    InputAudioTimeoutTriggered: TracedSession._timeout,
    TranscriptionCompleted: TracedSession._transcribed,
    ResponseDone: TracedSession._response_done,
    TurnMetrics: TracedSession._metrics,
    AudioDelta: TracedSession._audio,
    AudioTranscriptDone: TracedSession._answer_text,
    Interruption: TracedSession._interruption,
}
