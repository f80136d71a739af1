"""Twilio Media Streams' messages, read and checked, and the three we send.

Twilio sends `connected`, then `start` (the stream's and call's ids, the custom
parameters, the media format), then `media` (20 ms of 8 kHz mu-law, base64), `mark` (one
of ours, echoed once the audio before it has played), `dtmf` (a key pressed) and `stop`.
We send `media`, `mark` and `clear` (drop what is buffered). Anything else, or one out
of place, is a `StreamError` naming what was wrong: the stream is closed with it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

FRAME_BYTES = 160  # 20 ms of 8 kHz mu-law: one media message
MAX_TELNYX_BYTES = 8000  # a second: Telnyx's RTP payloads are 20 ms unless the call's ptime differs
SID_KEYS = {"twilio": "streamSid", "telnyx": "stream_id"}  # where a message names its stream
EVENTS = ("connected", "start", "media", "mark", "dtmf", "stop")
# Providers whose streams look like Twilio's, and the `start` fields that tell them apart
# (Telnyx's, `call_control_id`, is served: `_telnyx_start`)
OTHER_PROVIDERS = {
    "Plivo": {"streamId", "callId"},
    "Exotel": {"stream_sid", "call_sid", "account_sid"},
}


class StreamError(Exception):
    """A message the stream cannot take: `code` for /metrics, `message` for the close."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class Start:
    stream_sid: str
    call_sid: str
    parameters: dict[str, str] = field(default_factory=dict)
    provider: str = "twilio"  # or "telnyx": its stream id is `stream_id`, any frame length


@dataclass(frozen=True)
class Media:
    payload: bytes  # mu-law, FRAME_BYTES of it


@dataclass(frozen=True)
class Mark:
    name: str


@dataclass(frozen=True)
class Dtmf:
    digit: str


@dataclass(frozen=True)
class Other:
    """`connected` or `stop`: nothing to take from it but its event."""

    event: str


Message = Start | Media | Mark | Dtmf | Other


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StreamError("invalid_message", f"`{where}` must be an object")
    return value


def parse(text: str | bytes, stream_sid: str | None, provider: str = "twilio") -> Message:
    """One message off the stream; `stream_sid`: the stream's, once `start` told it."""
    try:
        message = _object(json.loads(text), "the message")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise StreamError("invalid_json", "a message is not JSON; Twilio sends JSON text") from None
    event = message.get("event")
    if event not in EVENTS:
        raise StreamError(
            "unknown_event", f"unknown event {event!r}; a media stream sends {', '.join(EVENTS)}"
        )
    if event == "connected":
        return Other(event)
    if event == "start":
        if stream_sid is not None:
            raise StreamError("duplicate_start", "a second `start` on one stream")
        return _start(message)
    if stream_sid is None:
        raise StreamError("not_started", f"`{event}` before `start`; send `start` first")
    key = SID_KEYS[provider]
    if message.get(key) != stream_sid:
        raise StreamError(
            "wrong_stream_sid",
            f"`{event}` names {key} {message.get(key)!r}, not this stream's {stream_sid!r}",
        )
    if event == "media":
        return Media(_payload(_object(message.get("media"), "media"), provider))
    if event == "mark":
        return Mark(str(_object(message.get("mark"), "mark").get("name", "")))
    if event == "dtmf":
        digit = _object(message.get("dtmf"), "dtmf").get("digit")
        if not (isinstance(digit, str) and len(digit) == 1 and digit in "0123456789*#ABCD"):
            raise StreamError("invalid_dtmf", f"dtmf.digit {digit!r} is not a keypad key")
        return Dtmf(digit)
    return Other(event)


def _start(message: dict[str, Any]) -> Start:
    start = _object(message.get("start"), "start")
    if "call_control_id" in start:
        return _telnyx_start(message, start)
    stream_sid = start.get("streamSid") or message.get("streamSid")
    call_sid = start.get("callSid")
    if not (isinstance(stream_sid, str) and stream_sid and isinstance(call_sid, str)):
        other = next((name for name, keys in OTHER_PROVIDERS.items() if keys <= set(start)), None)
        if other is not None:  # the same shape, told apart by its ids as Pipecat's runner does
            raise StreamError(
                "unsupported_provider",
                f"a {other} stream (start has {', '.join(sorted(OTHER_PROVIDERS[other]))}); "
                "only Twilio's is served",
            )
        raise StreamError("invalid_start", "`start` must carry start.streamSid and start.callSid")
    fmt = start.get("mediaFormat") or {}
    heard = (fmt.get("encoding"), fmt.get("sampleRate"), fmt.get("channels", 1))
    if heard != ("audio/x-mulaw", 8000, 1):
        raise StreamError(
            "unsupported_format",
            f"mediaFormat {fmt!r} is not audio/x-mulaw at 8000 Hz, mono (the only one Twilio "
            "streams)",
        )
    given = start.get("customParameters") or {}
    parameters = {str(k): str(v) for k, v in _object(given, "start.customParameters").items()}
    return Start(stream_sid, call_sid, parameters)


def _telnyx_start(message: dict[str, Any], start: dict[str, Any]) -> Start:
    """Telnyx's `start`: its ids are `stream_id` (beside `start`) and `call_control_id`,
    its format `media_format` {encoding PCMU, sample_rate 8000, channels 1}."""
    stream_id, call_id = message.get("stream_id"), start.get("call_control_id")
    if not (isinstance(stream_id, str) and stream_id and isinstance(call_id, str)):
        raise StreamError("invalid_start", "a Telnyx `start` must carry stream_id")
    fmt = start.get("media_format") or {}
    heard = (fmt.get("encoding"), int(fmt.get("sample_rate") or 0), int(fmt.get("channels") or 1))
    if heard != ("PCMU", 8000, 1):
        raise StreamError(
            "unsupported_format",
            f"media_format {fmt!r} is not PCMU at 8000 Hz, mono (ask Telnyx for codec PCMU)",
        )
    return Start(stream_id, call_id, {}, "telnyx")


def _payload(media: dict[str, Any], provider: str = "twilio") -> bytes:
    track = media.get("track", "inbound")
    if track != "inbound":
        raise StreamError("unsupported_track", f"media.track {track!r}: only the caller's")
    try:
        payload = base64.b64decode(media.get("payload", ""), validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise StreamError("invalid_media", "media.payload is not base64") from None
    if provider == "telnyx" and 0 < len(payload) <= MAX_TELNYX_BYTES:
        return payload  # 20 ms or more a frame, as the call's packets come
    if len(payload) != FRAME_BYTES:
        raise StreamError(
            "invalid_media",
            f"media.payload holds {len(payload)} bytes, not {FRAME_BYTES} (20 ms of 8 kHz mu-law)",
        )
    return payload


def _ours(event: str, stream_sid: str, provider: str, **fields: Any) -> str:
    """A message of ours: Twilio's name the stream; Telnyx's need not (one per socket)."""
    sid = {"streamSid": stream_sid} if provider == "twilio" else {}
    return json.dumps({"event": event, **sid, **fields})


def media(stream_sid: str, frame: bytes, provider: str = "twilio") -> str:
    payload = base64.b64encode(frame).decode("ascii")
    return _ours("media", stream_sid, provider, media={"payload": payload})


def mark(stream_sid: str, name: str, provider: str = "twilio") -> str:
    return _ours("mark", stream_sid, provider, mark={"name": name})


def clear(stream_sid: str, provider: str = "twilio") -> str:
    return _ours("clear", stream_sid, provider)
