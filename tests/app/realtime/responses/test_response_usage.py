"""`response.done`'s usage and its `incomplete` status with the bundled LLM: the counts are
the engine's own (what /v1/chat/completions reports for the same messages, and the
prompt's length as transformers builds it), the prefix cache shows as cached tokens, and
an answer cut at `max_output_tokens` is `incomplete` yet whole; the official SDK's event
models of both dialects parse all of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeServerEvent as GAServerEvent
from pydantic import TypeAdapter

from tests.app.llm.conftest import chat_ids
from tests.conftest import ask, audio_seconds, is_done, make_settings, receive_until

MODEL = "smollm2-135m-instruct"
INSTRUCTIONS = "Answer in one short sentence."
QUESTION = "What is the capital of France?"
PARSERS: dict[str, TypeAdapter[Any]] = {
    "ga": TypeAdapter(GAServerEvent),
    "beta": TypeAdapter(BetaServerEvent),
}


def _url(dialect: str) -> str:
    return f"/v1/realtime?dialect={dialect}"


def _options(dialect: str, audio: bool = False, **more: Any) -> dict[str, Any]:
    modalities = "output_modalities" if dialect == "ga" else "modalities"
    return {"instructions": INSTRUCTIONS, modalities: ["audio" if audio else "text"], **more}


def _turn(ws: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    ask(ws, QUESTION, options)
    return receive_until(ws, is_done)


def _answer(done: dict[str, Any]) -> str:
    part = done["output"][0]["content"][0]
    return str(part.get("text", part.get("transcript")))


def _parsed_usage(dialect: str, event: dict[str, Any]) -> Any:
    """The SDK's own model of the event's usage (raises if the SDK does not parse it)."""
    parsed = PARSERS[dialect].validate_python(event)
    assert parsed.type == "response.done"
    return parsed.response.usage


@pytest.mark.parametrize("dialect", ["ga", "beta"])
def test_usage_is_the_engines_own_count(
    app_client: TestClient, shared_components: Any, dialect: str
) -> None:
    with app_client.websocket_connect(_url(dialect)) as ws:
        ws.receive_json()
        events = _turn(ws, _options(dialect, max_output_tokens=64))
    created = next(e for e in events if e["type"] == "response.created")
    assert created["response"]["usage"] is None
    done = events[-1]["response"]
    assert done["status"] == "completed" and done["status_details"] is None
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    body = {"model": MODEL, "messages": messages, "max_tokens": 64, "temperature": 0}
    reference = app_client.post("/v1/chat/completions", json=body).json()
    assert _answer(done) == reference["choices"][0]["message"]["content"]  # the same generation
    usage, expected = done["usage"], reference["usage"]
    prompt_tokens = len(chat_ids(shared_components.llm.tokenizer, messages))
    assert usage["input_tokens"] == expected["prompt_tokens"] == prompt_tokens
    assert usage["output_tokens"] == expected["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    inputs, outputs = usage["input_token_details"], usage["output_token_details"]
    assert (inputs["text_tokens"], inputs["audio_tokens"], inputs["image_tokens"]) == (
        prompt_tokens,
        0,
        0,
    )
    assert 0 <= inputs["cached_tokens"] <= prompt_tokens
    assert inputs["cached_tokens_details"]["text_tokens"] == inputs["cached_tokens"]
    assert outputs == {"text_tokens": usage["output_tokens"], "audio_tokens": 0}
    parsed = _parsed_usage(dialect, events[-1])
    assert (parsed.input_tokens, parsed.output_tokens) == (prompt_tokens, usage["output_tokens"])
    assert parsed.input_token_details.cached_tokens == inputs["cached_tokens"]


def test_a_repeated_turn_reports_the_prefix_cache(app_client: TestClient) -> None:
    """The second turn's prompt begins with the first's whole prompt: its KV blocks are
    reused, and `cached_tokens` says how many tokens of the prompt they held."""
    with app_client.websocket_connect(_url("ga")) as ws:
        ws.receive_json()
        first = _turn(ws, _options("ga", max_output_tokens=32))[-1]["response"]["usage"]
        events = _turn(ws, _options("ga", max_output_tokens=32))
    second = events[-1]["response"]["usage"]
    cached = second["input_token_details"]["cached_tokens"]
    assert second["input_tokens"] > first["input_tokens"]
    block = make_settings().llm_block_size  # the server's KV blocks
    assert first["input_tokens"] // block * block <= cached < second["input_tokens"]
    assert second["input_token_details"]["cached_tokens_details"]["text_tokens"] == cached
    assert _parsed_usage("ga", events[-1]).input_token_details.cached_tokens == cached


@pytest.mark.parametrize(("dialect", "audio"), [("ga", True), ("beta", False)])
def test_an_answer_cut_at_max_output_tokens_is_incomplete(
    app_client: TestClient, dialect: str, audio: bool
) -> None:
    """Bug: the cut answer said `completed`. Now `incomplete` (OpenAI's status_details), its
    item too, and still spoken: the words it has are a finished answer."""
    with app_client.websocket_connect(_url(dialect)) as ws:
        ws.receive_json()
        events = _turn(ws, _options(dialect, audio=audio, max_output_tokens=3))
        done = events[-1]["response"]
        ws.send_text(
            json.dumps({"type": "conversation.item.retrieve", "item_id": done["output"][0]["id"]})
        )
        retrieved = receive_until(ws, lambda e: e["type"] == "conversation.item.retrieved")[-1]
    assert done["status"] == "incomplete"
    assert done["status_details"] == {"type": "incomplete", "reason": "max_output_tokens"}
    assert done["usage"]["output_tokens"] == 3 and done["usage"]["input_tokens"] > 0
    assert done["output"][0]["status"] == "incomplete" and _answer(done)
    item_done = next(e for e in events if e["type"] == "response.output_item.done")
    assert item_done["item"]["status"] == "incomplete"
    assert retrieved["item"]["status"] == "incomplete"
    assert _parsed_usage(dialect, events[-1]).output_tokens == 3
    if audio:  # spoken: GA's audio deltas, renamed to the beta names audio_seconds reads
        deltas = [
            {**e, "type": "response.audio.delta"}
            for e in events
            if e["type"] == "response.output_audio.delta"
        ]
        assert audio_seconds(deltas) > 0.1
