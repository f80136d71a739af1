"""The shapes server events carry (items, content parts, the response object and its
usage) and their ids, made in one place so each has one shape whoever sends it (beta
names; an event's `to_wire` renames for GA).

The events themselves are the classes in server_events/. The builders at the end return
those classes for code that still names events by their wire type; new code constructs
the classes.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

from app.protocol import server_events as se


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def message_item(
    item_id: str, role: str, status: str, content: list[dict[str, Any]]
) -> dict[str, Any]:
    """A conversation item of type message (the `item` of item and output_item events)."""
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": status,
        "role": role,
        "content": content,
    }


def function_call_item(
    item_id: str, status: str, call_id: str, name: str, arguments: str
) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def function_call_output_item(item_id: str, call_id: str, output: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call_output",
        "status": "completed",
        "call_id": call_id,
        "output": output,
    }


def assistant_part(audio: bool, text: str) -> dict[str, Any]:
    return {"type": "audio", "transcript": text} if audio else {"type": "text", "text": text}


def response_object(
    response_id: str,
    status: str,
    output: list[dict[str, Any]],
    status_details: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "realtime.response",
        "status": status,
        "status_details": status_details,
        "output": output,
        "usage": usage,
    }


def response_usage(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int
) -> dict[str, Any]:
    """A response's `usage` in OpenAI's shape (GA; beta clients ignore what beta lacks).

    Every token is a text token: spoken input reaches the LLM as its transcript and the
    answer is spoken by a TTS outside the model, so audio and image counts are 0.
    """
    no_media = {"audio_tokens": 0, "image_tokens": 0}
    return {
        "total_tokens": prompt_tokens + completion_tokens,
        "input_tokens": prompt_tokens,
        "output_tokens": completion_tokens,
        "input_token_details": {
            "text_tokens": prompt_tokens,
            **no_media,
            "cached_tokens": cached_tokens,
            "cached_tokens_details": {"text_tokens": cached_tokens, **no_media},
        },
        "output_token_details": {"text_tokens": completion_tokens, "audio_tokens": 0},
    }


# -- builders that name events by wire type (the turn coordinator's; prefer the classes) --


def event(event_type: str, **fields: Any) -> se.ServerEvent:
    """The event class of `event_type` (its beta name), made from its wire fields."""
    try:
        cls = se.EVENT_TYPES[event_type]
    except KeyError:
        raise ValueError(f"no server event is called '{event_type}'") from None
    return cls(**fields)


def error(
    code: str,
    message: str,
    *,
    param: str | None = None,
    event_id: str | None = None,
    kind: str = "invalid_request_error",
) -> se.Error:
    return se.Error(code=code, message=message, param=param, client_event_id=event_id, kind=kind)


def item_created(previous_item_id: str | None, item: dict[str, Any]) -> se.ItemCreated:
    return se.ItemCreated(previous_item_id=previous_item_id, item=item)


def speech_edge(edge: str, sample: int, item_id: str, rate: int = 16_000) -> se.ServerEvent:
    """`input_audio_buffer.speech_started`/`_stopped` at a 16 kHz stream position."""
    ms = sample * 1000 // rate
    if edge == "started":
        return se.SpeechStarted(item_id=item_id, audio_start_ms=ms)
    return se.SpeechStopped(item_id=item_id, audio_end_ms=ms)


def item_deleted(item_id: str) -> se.ItemDeleted:
    return se.ItemDeleted(item_id=item_id)


def rate_limits(context_tokens: int, remaining_tokens: int) -> se.RateLimitsUpdated:
    return se.RateLimitsUpdated(context_tokens=context_tokens, remaining_tokens=remaining_tokens)


def transcription(kind: str, item_id: str, **fields: Any) -> se.ServerEvent:
    """`conversation.item.input_audio_transcription.<kind>` for content part 0."""
    kinds: dict[str, Callable[..., se.ServerEvent]] = {
        "delta": se.TranscriptionDelta,
        "completed": se.TranscriptionCompleted,
        "failed": se.TranscriptionFailed,
    }
    return kinds[kind](item_id=item_id, **fields)


def turn_metrics(
    response_id: str,
    stage_seconds: dict[str, float | None],
    audio_ms: float,
    status: str,
    language: str | None = None,
) -> se.TurnMetrics:
    return se.TurnMetrics(
        response_id=response_id,
        stage_seconds=stage_seconds,
        audio_ms=audio_ms,
        status=status,
        language=language,
    )
