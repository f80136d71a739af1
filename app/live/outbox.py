"""The realtime session's events, said as GPT-Live's: the session speaks its own typed
events into this outbox, which keeps what Live has (audio, transcripts placed on the
timeline, usage, refusals) and drops the rest (Live has no items, responses or commits).

After `session.closed` nothing more goes out."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable

from app.live.config import G711Format, PcmFormat
from app.live.timeline import Timeline, bytes_per_ms
from app.protocol.server_events import (
    AudioDelta,
    AudioTranscriptDelta,
    Error,
    OutputItemDone,
    RateLimitsUpdated,
    ResponseDone,
    ServerEvent,
    SpeechStarted,
    SpeechStopped,
    TranscriptionCompleted,
    TranscriptionDelta,
    Wire,
)
from app.protocol.server_events.live import (
    LIVE,
    InputTranscriptDelta,
    LiveEvent,
    OutputAudioDelta,
    OutputTranscriptDelta,
    SessionClosed,
    UsageUpdated,
)
from app.realtime.outbox import Outbox

# The runner's refusals that end a session because it lasted too long or sat idle.
EXPIRY_CODES = ("session_expired", "session_idle_timeout")


class LiveOutbox(Outbox):
    def __init__(self, timeline: Timeline, fmt: PcmFormat | G711Format) -> None:
        super().__init__(LIVE)
        self.timeline = timeline
        self.format = fmt
        self.resource: Callable[[], Wire] = dict  # set once the session has started
        self.on_answer_done: Callable[[], None] = lambda: None
        self.on_function_call: Callable[[Wire], None] = lambda _item: None
        self.on_heard: Callable[[str], None] = lambda _transcript: None  # a user turn's words
        self.closed = False
        self.ended = asyncio.Event()  # set with session.closed: the connection may end
        self.observers: list[Outbox] = []  # sidebands' (app/live/sideband.py)
        self._heard = (0, 0)  # where the turn being transcribed lies in the input audio
        self._said_in: dict[str, str] = {}  # each turn's words sent so far
        self._words: list[str] = []  # the answer's words waiting for their audio

    def emit(self, event: ServerEvent) -> None:
        if self.closed:
            return
        if self.observe is not None:  # the session's trace reads its own events
            self.observe(event)
        for live in self._translate(event):
            self.send(live)
            if not isinstance(live, OutputAudioDelta):  # sidebands observe all but audio
                for observer in self.observers:
                    observer.emit(live)
            if isinstance(live, SessionClosed):
                self.closed = True
                self.ended.set()
                return

    def close(self) -> None:
        super().close()
        for observer in self.observers:
            observer.close()

    def closing(self, reason: str, client_event_id: str | None = None) -> None:
        """`session.closed` with the final resource and usage; the last event."""
        usage = {"seconds": self.timeline.seconds()}
        self.emit(
            SessionClosed(
                reason=reason,
                session=self.resource(),
                usage=usage,
                client_event_id=client_event_id,
            )
        )

    def _translate(self, event: ServerEvent) -> list[LiveEvent | Error]:
        if isinstance(event, LiveEvent):
            return [event]
        if isinstance(event, Error):
            if event.code in EXPIRY_CODES:
                self.closing("expired")
                return []
            return [event]
        if isinstance(event, AudioDelta):
            return self._audio(event.delta)
        if isinstance(event, AudioTranscriptDelta):
            self._words.append(event.delta)
            return []
        if isinstance(event, OutputItemDone) and event.item.get("type") == "function_call":
            self.on_function_call(event.item)
            return []
        if isinstance(event, ResponseDone):
            # a cut answer's words that never had audio were not said
            words = self._flush_words() if event.response.get("status") == "completed" else []
            self._words.clear()
            self.on_answer_done()
            return words
        return self._heard_events(event)

    def _heard_events(self, event: ServerEvent) -> list[LiveEvent | Error]:
        if isinstance(event, SpeechStarted):
            self._heard = (event.audio_start_ms, event.audio_start_ms)
        elif isinstance(event, SpeechStopped):
            self._heard = (self._heard[0], event.audio_end_ms)
        elif isinstance(event, TranscriptionDelta) and event.delta:
            self._said_in[event.item_id] = self._said_in.get(event.item_id, "") + event.delta
            return [self._input_words(event.delta)]
        elif isinstance(event, TranscriptionCompleted):
            self.on_heard(event.transcript)
            rest = unsaid(self._said_in.pop(event.item_id, ""), event.transcript)
            if rest:
                return [self._input_words(rest)]
        elif isinstance(event, RateLimitsUpdated) and event.context_tokens > 0:
            used = 1 - event.remaining_tokens / event.context_tokens
            return [
                UsageUpdated(
                    usage={"seconds": self.timeline.seconds()},
                    context_window={"usage_ratio": round(min(max(used, 0.0), 1.0), 4)},
                )
            ]
        return []

    def _input_words(self, words: str) -> InputTranscriptDelta:
        start, end = self._heard
        return InputTranscriptDelta(delta=words, start_ms=start, end_ms=max(start, end))

    def _audio(self, delta: str) -> list[LiveEvent | Error]:
        size = len(base64.b64decode(delta))
        start, end = self.timeline.spoken(size / bytes_per_ms(self.format))
        words: list[LiveEvent | Error] = [
            OutputTranscriptDelta(delta=text, start_ms=start, end_ms=end) for text in self._words
        ]
        self._words.clear()
        return [*words, OutputAudioDelta(delta=delta)]

    def _flush_words(self) -> list[LiveEvent | Error]:
        """Words no audio followed (a cut answer's last words): placed where it stopped."""
        at = self.timeline.spoken(0)[1]
        words: list[LiveEvent | Error] = [
            OutputTranscriptDelta(delta=text, start_ms=at, end_ms=at) for text in self._words
        ]
        self._words.clear()
        return words


def _letters(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())


def unsaid(said: str, final: str) -> str:
    """What of a turn's final transcript its streamed words did not say yet.

    Live's input transcript only grows, while the session streams the words its partial
    passes agree on and then completes the turn with a final pass that often hears more
    (the last words, or a continued turn's second half). The rest is sent when the final
    begins with what was said (letters compared, punctuation and case aside); a final
    that heard the start differently cannot be taken back, and adds nothing."""
    if not _letters(said):
        return final if _letters(final) else ""
    target, seen = _letters(said), 0
    for index, char in enumerate(final):
        if seen >= len(target):
            rest = final[index:]
            return rest if _letters(rest) else ""
        if char.isalnum():
            low = char.lower()
            if target[seen : seen + len(low)] != low:
                return ""
            seen += len(low)
    return ""
