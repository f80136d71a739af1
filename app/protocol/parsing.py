"""Parsing client events: JSON -> a validated schema (schemas.py), or a ProtocolError with
a precise code, the field's name, and the client's `event_id` whenever it had one."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from app.protocol.client_events import ClientEvent, SessionUpdate
from app.protocol.errors import ProtocolError

_CLIENT_EVENT = TypeAdapter(ClientEvent)
KNOWN_TYPES = {
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "output_audio_buffer.clear",
    "conversation.item.create",
    "conversation.item.delete",
    "conversation.item.truncate",
    "conversation.item.retrieve",
    "response.create",
    "response.cancel",
}


MAX_DEPTH = 64  # far beyond any real event (a tool schema nests a handful of levels)


def _depth(data: Any) -> int:
    """How deeply `data` nests lists and objects (iteratively: no recursion to exhaust)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return deepest


# pydantic's labels for union branches and tags, never field names
_TYPE_LABELS = {"int", "float", "str", "bool", "list", "dict", "none", "message", "function_call"}
_TYPE_LABELS |= {"function_call_output"}


def parse_client_event(raw: str | bytes) -> Any:
    """Parse and validate one client event, raising ProtocolError with a precise code
    (and the client's `event_id`, whenever the event carried one)."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError("invalid_json", f"event is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ProtocolError("invalid_json", "event is nested too deeply") from exc
    if _depth(data) > MAX_DEPTH:  # parsed, but validating it would recurse as deep
        raise ProtocolError("invalid_json", f"event is nested more than {MAX_DEPTH} levels deep")
    if _has_escaped_surrogate(raw) and _lone_surrogate(data):
        raise ProtocolError(
            "invalid_value",
            "event contains invalid Unicode (a lone UTF-16 surrogate escape such as \\ud800); "
            "send well-formed UTF-8 text",
            event_id=data.get("event_id") if isinstance(data, dict) else None,
        )
    if not isinstance(data, dict):
        raise ProtocolError("invalid_event", "an event must be a JSON object with a 'type' field")
    event_id = data.get("event_id") if isinstance(data.get("event_id"), str) else None
    event_type = data.get("type")
    if not isinstance(event_type, str):
        raise ProtocolError(
            "invalid_event", "the event has no string 'type' field", param="type", event_id=event_id
        )
    if event_type not in KNOWN_TYPES:
        raise ProtocolError(
            "unknown_event_type",
            f"unknown event type '{event_type}'; supported: {sorted(KNOWN_TYPES)}",
            param="type",
            event_id=event_id,
        )
    if event_type == "session.update":
        return _lenient_session_update(data, event_id)
    try:
        return _CLIENT_EVENT.validate_python(data)
    except ValidationError as exc:
        raise validation_error(event_type, exc, event_id) from exc


def _lenient_session_update(data: dict[str, Any], event_id: str | None) -> SessionUpdate:
    """A `session.update` with each field outside the schema left out (and reported),
    so one unsupported value does not lose the client's instructions and voice."""
    session = data.get("session")
    session = dict(session) if isinstance(session, dict) else session
    refused: list[ProtocolError] = []
    for _ in range(len(session) + 1 if isinstance(session, dict) else 1):
        try:
            event = SessionUpdate.model_validate({**data, "session": session})
        except ValidationError as exc:
            error = validation_error("session.update", exc, event_id, tagged=False)
            loc = exc.errors()[0]["loc"]
            if not (isinstance(session, dict) and len(loc) >= 2 and loc[0] == "session"):
                raise error from exc
            session.pop(str(loc[1]), None)
            refused.append(error)
            continue
        event._refused = refused
        return event
    raise refused[-1]


def _has_escaped_surrogate(raw: str | bytes) -> bool:
    """Cheap pre-check: only a `\\udXXX` escape can put a lone surrogate in parsed JSON."""
    needle = "\\ud" if isinstance(raw, str) else b"\\ud"
    return needle in raw.lower()  # type: ignore[operator]


def _lone_surrogate(value: Any) -> bool:
    """Whether any string in `value` cannot be encoded as UTF-8 (echoing it would fail)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(v) for v in value)
    return False


def validation_error(
    event_type: str, exc: ValidationError, event_id: str | None, tagged: bool = True
) -> ProtocolError:
    """The first problem pydantic found, as `invalid_value` naming the field (`tagged`:
    the location starts with the union's tag, the event type). Where a field takes one of
    several shapes (a format's string or object), the error of the shape the client sent
    is the one told."""
    errors = exc.errors()
    first = next((e for e in errors if not _other_shape(e)), errors[0])
    # Drop pydantic's union-branch labels ("literal[...]", "AudioFormat",
    # "constrained-int", "int") from the path: field names are none of those.
    path = [
        str(p)
        for p in first["loc"][1 if tagged else 0 :]
        if isinstance(p, int) or not (set(p) & set("[]'-") or p[:1].isupper() or p in _TYPE_LABELS)
    ]
    where = ".".join(path) or event_type
    return ProtocolError(
        "invalid_value",
        f"{event_type}: field '{where}': {first['msg']}",
        param=where,
        event_id=event_id,
    )


def _other_shape(error: Any) -> bool:
    """An error of a union's branch for another shape than the value's (an object
    checked against the string choices, a string against the object)."""
    if error["type"] in ("model_type", "dict_type", "model_attributes_type"):
        return True
    scalar_only = ("literal_error", "string_type", "enum", "int_type", "float_type")
    return error["type"] in scalar_only and isinstance(error.get("input"), dict | list)


def decode_base64(data: str, param: str = "audio") -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError(
            "invalid_base64", f"'{param}' is not valid base64: {exc}", param=param
        ) from exc
