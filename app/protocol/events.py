"""Server events of the Realtime protocol, built in one place (beta names; see dialect.py).

Every event the server sends is a plain dict made here, so an item or a response object
has exactly one shape whichever part of the session sends it.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def event(event_type: str, **fields: Any) -> dict[str, Any]:
    return {"type": event_type, **fields}


def error(
    code: str,
    message: str,
    *,
    param: str | None = None,
    event_id: str | None = None,
    kind: str = "invalid_request_error",
) -> dict[str, Any]:
    return event(
        "error",
        error={
            "type": kind,
            "code": code,
            "message": message,
            "param": param,
            "event_id": event_id,
        },
    )


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


def item_created(previous_item_id: str | None, item: dict[str, Any]) -> dict[str, Any]:
    return event("conversation.item.created", previous_item_id=previous_item_id, item=item)


def speech_edge(edge: str, sample: int, item_id: str, rate: int = 16_000) -> dict[str, Any]:
    """`input_audio_buffer.speech_started`/`_stopped` at a 16 kHz stream position."""
    field = "audio_start_ms" if edge == "started" else "audio_end_ms"
    return event(
        f"input_audio_buffer.speech_{edge}", item_id=item_id, **{field: sample * 1000 // rate}
    )


def item_deleted(item_id: str) -> dict[str, Any]:
    return event("conversation.item.deleted", item_id=item_id)


def rate_limits(context_tokens: int, remaining_tokens: int) -> dict[str, Any]:
    """`rate_limits.updated` at the start of a response. r1voice has no request quota; its
    one limit is the model's context: what the conversation may still grow by once this
    response's prompt and its reserved `max_output_tokens` are counted."""
    limit = {"name": "tokens", "limit": context_tokens, "remaining": remaining_tokens}
    return event("rate_limits.updated", rate_limits=[{**limit, "reset_seconds": 0.0}])


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


def transcription(kind: str, item_id: str, **fields: Any) -> dict[str, Any]:
    """`conversation.item.input_audio_transcription.<kind>` for content part 0."""
    return event(
        f"conversation.item.input_audio_transcription.{kind}",
        item_id=item_id,
        content_index=0,
        **fields,
    )


def turn_metrics(
    response_id: str,
    stage_seconds: dict[str, float | None],
    audio_ms: float,
    status: str,
    language: str | None = None,
) -> dict[str, Any]:
    """Our `r1voice.turn.metrics`: milliseconds from the end of speech to each stage, and
    the language the turn was heard in."""
    return event(
        "r1voice.turn.metrics",
        response_id=response_id,
        **{
            f"speech_stopped_to_{k}_ms": None if v is None else round(v * 1000, 1)
            for k, v in stage_seconds.items()
        },
        audio_ms=round(audio_ms, 1),
        status=status,
        language=language,
    )
