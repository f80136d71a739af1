"""The shapes server events carry (items, content parts, the response object and its
usage) and their ids, made in one place so each has one shape whoever sends it (beta
names; an event's `to_wire` renames for GA).

The events themselves are the classes in server_events/.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any


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
