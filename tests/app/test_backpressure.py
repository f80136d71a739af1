"""An overloaded LLM refuses at once: HTTP 429 with Retry-After, WebSocket `server_busy`;
the session goes on. (The engine's own queue limits are tested in tests/engine.)"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator
from typing import Any

from app.llm import ChatMessage, GenerationParams, LLMBackend, LLMBusyError, LLMDelta
from tests.conftest import client_with, is_done, receive_until, respond, send_user_text


class BusyOnceLLM(LLMBackend):
    """Refuses the first request as busy, then answers; records the priorities it got."""

    name = "busy-once"
    model = "smollm2-135m-instruct"
    context_length = 2048

    def __init__(self) -> None:
        self.calls = 0
        self.priorities: list[int | None] = []

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.calls += 1
        self.priorities.append(params.priority)
        if self.calls == 1:
            raise LLMBusyError(
                "the engine's waiting queue is full (4096 tokens waiting); retry shortly",
                retry_after_s=2.4,
            )
        yield LLMDelta("Paris.")
        yield LLMDelta(finish_reason="stop", prompt_tokens=5, completion_tokens=3)

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def warmup(self) -> None:
        return None


def test_http_busy_is_429_with_retry_after(shared_components: Any) -> None:
    llm = BusyOnceLLM()
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    body = {
        "model": "smollm2-135m-instruct",
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "priority": 7,
    }
    refused = client.post("/v1/chat/completions", json=body)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "2"
    assert refused.json()["error"]["code"] == "server_busy"
    accepted = client.post("/v1/chat/completions", json=body)
    assert accepted.status_code == 200
    assert accepted.json()["choices"][0]["message"]["content"] == "Paris."
    assert accepted.json()["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 3,
        "total_tokens": 8,
    }
    assert llm.priorities == [7, 7]


def test_websocket_busy_is_an_error_event_and_the_session_goes_on(shared_components: Any) -> None:
    llm = BusyOnceLLM()
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        send_user_text(ws, "Capital of France?")
        ws.receive_json()
        respond(ws, {"modalities": ["text"]})
        first = receive_until(ws, is_done)
        errors = [e for e in first if e["type"] == "error"]
        assert [e["error"]["code"] for e in errors] == ["server_busy"]
        assert first[-1]["response"]["status"] == "failed"
        ws.send_text(json.dumps({"type": "session.update", "session": {"priority": 3}}))
        ws.receive_json()
        respond(ws, {"modalities": ["text"]})
        second = receive_until(ws, is_done)
    assert second[-1]["response"]["status"] == "completed"
    assert llm.priorities == [-1, 3]  # voice sessions default ahead of HTTP; the session can set it
