"""The two dialects of the Realtime protocol: GA (the default) and beta.

A session is GA unless the client asks for beta: an `OpenAI-Beta: realtime=v1` header,
the `openai-beta.realtime-v1` subprotocol, or `?dialect=beta`. Server events are said in
each by server_events/beta.py and ga.py; what is here is the client's side: GA's
`session.update` flattened into the beta fields we validate, and our session object in
GA's shape.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.protocol.errors import ProtocolError
from app.protocol.session_schema import BETA_FORMATS, G711_TYPES

BETA, GA = "beta", "ga"


def ga_session_patch(session: dict[str, Any]) -> dict[str, Any]:
    """Flatten a GA `session` object into the beta field names we validate."""
    flat = {k: v for k, v in session.items() if k not in ("audio", "type", "max_output_tokens")}
    if "max_output_tokens" in session:
        flat["max_response_output_tokens"] = session["max_output_tokens"]
    audio = session.get("audio") or {}
    if not isinstance(audio, dict):
        return {**flat, "audio": audio}  # let validation name the bad field
    given_in, given_out = audio.get("input") or {}, audio.get("output") or {}
    for name, part in (("input", given_in), ("output", given_out)):
        if not isinstance(part, dict):
            raise ProtocolError(
                "invalid_value",
                f"session.audio.{name} must be an object, got {type(part).__name__}",
                param=f"session.audio.{name}",
            )
    source = {**given_in, **{f"out_{k}": v for k, v in given_out.items()}}
    mapping = {
        "format": "input_audio_format",
        "transcription": "input_audio_transcription",
        "turn_detection": "turn_detection",
        "out_format": "output_audio_format",
        "out_voice": "voice",
        "out_speed": "speed",
    }
    for src, dst in mapping.items():
        if src in source:
            flat[dst] = source[src]
    return flat


def looks_ga(session: dict[str, Any]) -> bool:
    """GA's session object has a `type` (the beta one has none)."""
    return "type" in session or "audio" in session or "output_modalities" in session


def ga_session_update(raw: str | bytes) -> dict[str, Any] | None:
    """The GA `session.update` in a client message, parsed; None for any other message
    (the common case, audio appends, is not parsed twice) or one that does not parse
    (parse_client_event reports it)."""
    marker = "session.update"
    if (marker.encode() if isinstance(raw, bytes) else marker) not in raw:  # type: ignore[operator]
        return None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("type") != "session.update":
        return None
    session = data.get("session")
    if not isinstance(session, dict) or not looks_ga(session):
        return None
    return data


def flat_session_update(update: dict[str, Any]) -> str:
    """A GA `session.update` (see ga_session_update) -> the flat one we validate. An error
    carries the update's `event_id`."""
    session = update["session"]
    try:
        if session.get("type") not in (None, "realtime"):
            raise ProtocolError(
                "unsupported_session_type",
                f"session type '{session.get('type')}' is not supported; use 'realtime'",
                param="session.type",
            )
        return json.dumps({**update, "session": ga_session_patch(session)})
    except ProtocolError as exc:
        event_id = update.get("event_id")
        exc.event_id = event_id if isinstance(event_id, str) else None
        raise


# Where a GA client wrote each field that ga_session_patch flattens.
GA_FIELD_NAMES = {
    "input_audio_format": "audio.input.format",
    "input_audio_transcription": "audio.input.transcription",
    "turn_detection": "audio.input.turn_detection",
    "output_audio_format": "audio.output.format",
    "voice": "audio.output.voice",
    "speed": "audio.output.speed",
    "max_response_output_tokens": "max_output_tokens",
}
_FLAT_FIELD = re.compile(r"\bsession\.(" + "|".join(GA_FIELD_NAMES) + r")\b")


def ga_named(exc: ProtocolError) -> ProtocolError:
    """A refusal of a GA `session.update`, its fields named as the client wrote them
    (`session.audio.input.format`, not the flat `session.input_audio_format`)."""

    def ga(text: str) -> str:
        return _FLAT_FIELD.sub(lambda m: "session." + GA_FIELD_NAMES[m.group(1)], text)

    param = None if exc.param is None else ga(exc.param)
    return ProtocolError(exc.code, ga(exc.message), param=param, event_id=exc.event_id)


def session_to_ga(beta: dict[str, Any]) -> dict[str, Any]:
    """Our beta-shaped session object -> the GA shape."""

    def fmt(value: Any) -> Any:
        shown = BETA_FORMATS[value].model_dump() if isinstance(value, str) else dict(value)
        if shown.get("type") in G711_TYPES:
            shown.pop("rate", None)  # GA's G.711 formats have none: 8 kHz
        return shown

    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": beta["id"],
        "model": beta["model"],
        "output_modalities": beta["modalities"],
        "instructions": beta["instructions"],
        "max_output_tokens": beta["max_response_output_tokens"],
        "tools": beta["tools"],
        "tool_choice": beta["tool_choice"],
        "r1voice": beta["r1voice"],
        "audio": {
            "input": {
                "format": fmt(beta["input_audio_format"]),
                "transcription": beta["input_audio_transcription"],
                "turn_detection": beta["turn_detection"],
            },
            "output": {
                "format": fmt(beta["output_audio_format"]),
                "voice": beta["voice"],
                "speed": beta["speed"],
            },
        },
    }
