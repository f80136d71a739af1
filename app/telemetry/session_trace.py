"""What a session tells those who watch it: its server events, the audio heard and
played, its start and end. This base does nothing but record (when a recorder is given);
TracedSession (traced_session.py) turns the same calls into spans. Tracing off and
recording off: every hook is a no-op and the models are used as they are."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
from opentelemetry.trace import Span

from app.protocol.server_events import ServerEvent
from app.protocol.session_schema import AudioFormat
from app.recording import CallRecorder, RecordingStore
from app.telemetry.reports import SessionReports

log = logging.getLogger("r1voice.telemetry")
Attributes = dict[str, Any]
Played = Callable[[bytes, AudioFormat], None]


class SessionTrace:
    enabled = False  # spans are made (TracedSession)
    content = False  # transcripts, answers and tool data go in them

    def __init__(
        self,
        reports: SessionReports | None = None,
        recordings: RecordingStore | None = None,
        recording_max_s: float = 3600.0,
    ) -> None:
        self.reports, self.recordings = reports, recordings
        self.recording_max_s = recording_max_s
        self.recorder: CallRecorder | None = None
        self.id = ""

    def start(self, session_id: str) -> None:
        """The session began (its id as `session.created` gives it)."""
        if self.reports is None and self.recordings is None:
            return  # OFF, shared by every session: it keeps nothing of theirs
        self.id = session_id
        if self.recordings is None:
            return
        why_not = self.recordings.room()
        if why_not is not None:
            log.warning("session %s is not recorded: %s", session_id, why_not)
            return
        self.recorder = CallRecorder(self.recordings, session_id, self.recording_max_s)

    def announce(self, session: dict[str, Any]) -> dict[str, Any]:
        """The session object as `session.created` shows it: with the recording's URL when
        the session is recorded."""
        if self.recorder is None:
            return session
        return {**session, "recording": {"url": self.recorder.url}}

    def event(self, event: ServerEvent) -> None:
        """A server event the session emitted (before the client's dialect)."""
        if self.recorder is not None:
            try:
                self.recorder.event(event)
            except Exception:  # a bug of the recording's must not end the conversation
                log.exception("recording failed on %s", event.TYPE)

    def heard(self, samples_16k: np.ndarray) -> None:
        """Input audio the session took in (16 kHz, as the VAD hears it)."""
        if self.recorder is not None:
            try:
                self.recorder.heard(samples_16k)
            except Exception:
                self._lose_recording("the user's audio")

    def playing(self, played: Played) -> Played:
        """`played` (where the answer's audio goes as it leaves), seen by the recorder too."""
        recorder = self.recorder
        if recorder is None and self.recordings is None:
            return played

        def both(piece: bytes, fmt: AudioFormat) -> None:
            if self.recorder is not None:
                try:
                    self.recorder.played(piece, fmt)
                except Exception:
                    self._lose_recording("the answer's audio")
            played(piece, fmt)

        return both

    def _lose_recording(self, what: str) -> None:
        """A bug of the recording's: it stops, the conversation goes on."""
        log.exception("session %s: recording %s failed; the recording stops", self.id, what)
        self.recorder = None

    def configure(self, tracing: Any) -> None:
        """The client's `session.tracing`: "auto" or {workflow_name, group_id, metadata}."""

    def close(self, items: list[dict[str, Any]]) -> None:
        """The session ended with these conversation items: its report closes, its
        recording is written (with the report's items and turn timings)."""
        if self.reports is not None:
            self.reports.close(self.id, items)
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        report = self.reports.get(self.id) if self.reports is not None else None
        transcript = report.to_wire() if report is not None else {"id": self.id, "items": items}
        written = recorder.finish(transcript)
        if written is not None and self.reports is not None:
            reports, url, session_id = self.reports, recorder.url, self.id

            def announce(done: Any) -> None:
                if done.result():  # written: the report names it
                    reports.recorded(session_id, url)

            written.add_done_callback(announce)

    def stage(
        self, name: str, start_ns: int, attributes: Attributes, of: str = "answer"
    ) -> Span | None:
        """A stage span; None when tracing is off. `of`: "speech" (under the turn being
        spoken, e.g. its transcription), "answer" (the turn being answered, e.g. TTS), or
        a response id (the turn that response answers)."""
        return None

    def request_turn(self, request_id: str) -> None:
        """An LLM request for response `request_id` starts in the newest turn."""
