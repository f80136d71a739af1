"""The session's server events as a device hears them: `stt`, `llm` (emotion), `tts`
start / sentence_start / stop, and the answer's audio as Opus frames.

Audio deltas are encoded as they come and handed, with the messages, to the board's
`Playout`, which paces the frames for the board's buffer and drops those not yet sent
when the answer is cut off (barge-in, abort).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from app.protocol.server_events import (
    AudioDelta,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ResponseCreated,
    ResponseDone,
    TranscriptionCompleted,
)
from app.xiaozhi.hello import SERVER_FRAME_MS
from app.xiaozhi.opus import OpusEncoder
from app.xiaozhi.playout import LEAD_MS, REALTIME_LEAD_MS, Playout

SendJson = Callable[[dict[str, Any]], Awaitable[None]]
SendOpus = Callable[[bytes], Awaitable[None]]
# A sentence ends at a full stop, question or exclamation mark (ASCII, then a space or
# the end) or their Chinese forms (no space follows them).
SENTENCE_END = re.compile(r"[。！？；!?]|[.;](?=\s)")


@dataclass(frozen=True)
class FunctionCall:
    call_id: str
    name: str
    arguments: str


def emotion(text: str) -> tuple[str, str]:
    """The face for an answer starting with `text` (the firmware's emotion names)."""
    if any(w in text.lower() for w in ("sorry", "抱歉", "对不起", "unfortunately")):
        return "sad", "😔"
    if "!" in text or "！" in text:
        return "happy", "🙂"
    return "neutral", "😶"


class Replies:
    """One device's side of the session's events."""

    def __init__(self, session_id: str, send_json: SendJson, send_opus: SendOpus) -> None:
        self._session_id = session_id
        self._out = Playout(send_json, send_opus, SERVER_FRAME_MS)
        self._encoder = OpusEncoder(frame_ms=SERVER_FRAME_MS)
        self.speaking = False  # between tts start and tts stop
        self._text = ""  # the answer's transcript not yet shown as a sentence
        self._emotion_sent = False
        self._response_id = ""
        self._cut: set[str] = set()  # answers stopped here: their late deltas are dropped
        self._holding = False  # a sound over the answer stopped the board (see `hold`)

    async def handle(self, event: dict[str, Any]) -> list[FunctionCall]:
        """Send the device what `event` means to it; returns the function calls a finished
        response asks for (the adapter runs them on the device)."""
        kind = event.get("type")
        if event.get("response_id") in self._cut:
            return []
        if kind == TranscriptionCompleted.TYPE and event.get("transcript"):
            await self._message({"type": "stt", "text": event["transcript"]})
        elif kind == ResponseCreated.TYPE:
            self._text, self._emotion_sent = "", False
            self._response_id = (event.get("response") or {}).get("id", "")
            self._encoder.reset()
        elif kind == AudioTranscriptDelta.TYPE:
            await self._start()
            self._text += event.get("delta", "")
            await self._sentences(final=False)
        elif kind == AudioTranscriptDone.TYPE:
            await self._sentences(final=True)
        elif kind == AudioDelta.TYPE:
            await self._start()
            for packet in self._encoder.encode(base64.b64decode(event.get("delta", ""))):
                await self._opus(packet)
        elif kind == ResponseDone.TYPE:
            return await self._done(event.get("response") or {})
        return []

    def listening(self, realtime: bool) -> None:
        """The board's listening mode: in `realtime` it is sent less ahead (what it holds
        plays on after `tts stop`)."""
        self._out.lead_ms = REALTIME_LEAD_MS if realtime else LEAD_MS

    def hold(self) -> None:
        """A sound began over the answer: the board stops at once (`tts stop`, ahead of
        the frames), the frames it had not played wait here."""
        if self._holding or not (self.speaking or self._out.playing):
            return
        self._holding = True
        self._out.hold(self._stamped({"type": "tts", "state": "stop"}))

    def release(self, resume: bool) -> None:
        """The sound was decided on. `resume`: it was no barge-in, the board plays on from
        the held frame (`tts start` first); else the held frames are dropped (the answer
        paused: what it says next starts with its own `tts start`)."""
        if not self._holding:
            return
        self._holding = False
        if resume and (self.speaking or self._out.playing):
            self._out.release(self._stamped({"type": "tts", "state": "start"}))
            return
        self._encoder.reset()
        self._out.drop()
        self._out.release()
        self.speaking = False  # its `tts stop` went at the hold

    async def stop(self) -> None:
        """The answer is cut off here (the device aborted, or spoke over it)."""
        self._text = ""
        self._cut.add(self._response_id)
        await self.pause()

    async def pause(self) -> None:
        """Stop the board's playback (`tts stop`: it drops what it holds and listens); an
        answer that goes on after it starts again with `tts start`."""
        self._encoder.reset()
        self._out.drop()
        if self._holding:  # the board was stopped at the sound's start
            self._holding = False
            self._out.release()
            self.speaking = False
        if self.speaking:
            self.speaking = False
            await self._message({"type": "tts", "state": "stop"})

    def close(self) -> None:
        self._out.close()

    async def _done(self, response: dict[str, Any]) -> list[FunctionCall]:
        if response.get("status") == "completed":
            for packet in self._encoder.flush():
                await self._opus(packet)
            await self._sentences(final=True)
            self._cut.add(self._response_id)
            if self.speaking:  # after its last frame
                self.speaking = False
                await self._message({"type": "tts", "state": "stop"})
        else:
            await self.stop()
        return [
            FunctionCall(item["call_id"], item["name"], item.get("arguments", "{}"))
            for item in response.get("output") or []
            if item.get("type") == "function_call" and response.get("status") == "completed"
        ]

    async def _start(self) -> None:
        if not self.speaking:
            self.speaking = True
            await self._message({"type": "tts", "state": "start"})

    async def _sentences(self, final: bool) -> None:
        while (end := SENTENCE_END.search(self._text)) is not None or (final and self._text):
            cut = end.end() if end is not None else len(self._text)
            sentence, self._text = self._text[:cut].strip(), self._text[cut:]
            if not sentence:
                continue
            if not self._emotion_sent:
                self._emotion_sent = True
                face, emoji = emotion(sentence)
                await self._message({"type": "llm", "emotion": face, "text": emoji})
            await self._message({"type": "tts", "state": "sentence_start", "text": sentence})

    async def _opus(self, packet: bytes) -> None:
        self._out.put(packet)

    async def _message(self, message: dict[str, Any]) -> None:
        self._out.put(self._stamped(message))

    def _stamped(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"session_id": self._session_id, **message}
