"""A Twilio media stream as a Realtime session's transport (app/server/transport.py).

The stream drives the same session as the WebSocket and WebRTC routes: its first event
asks for G.711 u-law both ways (the session's own codec), each `media` frame becomes an
`input_audio_buffer.append`, a `dtmf` key a user message the model reads (and the
`conversation.item.added` it makes) and a `response.create`; a `mark` goes to the
playback, `stop` ends the session. The session's events have no place on the phone
line: they are dropped here (errors are logged). A message the stream cannot take
closes it with the reason, counted by its code (`on_error`).
"""

from __future__ import annotations

import base64
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from app.server.transport import Received
from app.telephony import twilio_messages
from app.telephony.twilio_messages import Dtmf, Mark, Media, Other, Start, StreamError
from app.telephony.twilio_playback import TwilioPlayback

log = logging.getLogger("r1voice.telephony")

ULAW_BOTH_WAYS = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {"format": {"type": "audio/pcmu"}},
            "output": {"format": {"type": "audio/pcmu"}},
        },
    },
}
CLOSE_PROTOCOL = 1008  # a message out of place or unknown
CLOSE_DATA = 1007  # a message whose content is wrong (its JSON, its audio)
DATA_ERRORS = ("invalid_json", "invalid_media")
MAX_REASON = 120  # bytes a WebSocket close reason may hold (125, less room)


def dtmf_text(digit: str) -> str:
    return f"(The caller pressed {digit} on the phone's keypad.)"


async def read_start(
    receive: Callable[[], Awaitable[str | bytes | None]],
) -> Start | None:
    """The stream's `start` (after `connected`); None if the caller left first. A
    `StreamError` for anything else first (media before start)."""
    while (text := await receive()) is not None:
        message = twilio_messages.parse(text, None)
        if isinstance(message, Start):
            return message
        if not (isinstance(message, Other) and message.event == "connected"):
            what = message.event if isinstance(message, Other) else type(message).__name__.lower()
            raise StreamError("not_started", f"`{what}` before `start`; send `start` first")
    return None


def close_code(error: StreamError) -> int:
    return CLOSE_DATA if error.code in DATA_ERRORS else CLOSE_PROTOCOL


def close_reason(error: StreamError) -> str:
    return error.message.encode()[:MAX_REASON].decode("utf-8", "ignore")


class TwilioStream:
    """The transport: Twilio's messages in as the session's events, none of its out."""

    def __init__(
        self,
        start: Start,
        receive: Callable[[], Awaitable[str | bytes | None]],
        close: Callable[[int, str], Awaitable[None]],
        playback: TwilioPlayback,
        on_error: Callable[[str], None],
    ) -> None:
        self.start = start
        self._receive, self._close, self._playback = receive, close, playback
        self._on_error = on_error
        self._pending: deque[str] = deque([json.dumps(ULAW_BOTH_WAYS)])
        self.digits = ""  # the keys pressed, in order
        self.closed_with: StreamError | None = None

    async def receive(self) -> Received | None:
        while not self._pending:
            text = await self._receive()
            if text is None:
                return None
            try:
                message = twilio_messages.parse(text, self.start.stream_sid, self.start.provider)
            except StreamError as error:
                await self._refuse(error)
                return None
            if isinstance(message, Media):
                audio = base64.b64encode(message.payload).decode("ascii")
                return json.dumps({"type": "input_audio_buffer.append", "audio": audio})
            if isinstance(message, Mark):
                self._playback.marked(message.name)
            elif isinstance(message, Dtmf):
                self._press(message.digit)
            elif isinstance(message, Other) and message.event == "stop":
                return None
        return self._pending.popleft()

    def _press(self, digit: str) -> None:
        self.digits += digit
        content = [{"type": "input_text", "text": dtmf_text(digit)}]
        item = {"type": "message", "role": "user", "content": content}
        self._pending.append(json.dumps({"type": "conversation.item.create", "item": item}))
        self._pending.append(json.dumps({"type": "response.create"}))

    async def _refuse(self, error: StreamError) -> None:
        self.closed_with = error
        self._on_error(error.code)
        log.info("stream %s closed: %s (%s)", self.start.stream_sid, error.message, error.code)
        await self._close(close_code(error), close_reason(error))

    async def send(self, text: str) -> None:
        if '"error"' in text[:40]:  # the session's errors: a phone line cannot show them
            log.info("stream %s: %s", self.start.stream_sid, text)

    async def close(self, code: int, reason: str) -> None:
        await self._close(code, reason)
