"""Client delegation over the Live WebSocket: the live model calls its `delegate` tool,
the client gets `session.delegation.created`, the model says something while it waits,
and the client's commentary (with the delegation id) is spoken; appends naming an
unknown or finished delegation are refused and the session goes on."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from app.llm.backend import ChatMessage, GenerationParams, LLMDelta
from tests.app.live.conftest import LiveClient, live_connection
from tests.app.server.test_drain import SlowLLM
from tests.fakes import ScriptedLLM

pytestmark = pytest.mark.timeout(600)

DELEGATE = ['<tool_call>{"name": "delegate", "arguments": {"task": "Prove it."}}</tool_call>']
WAIT = ["Let me look ", "into that."]
ANSWER = ["The answer ", "is forty-two."]
HARD = [{"role": "user", "content": [{"type": "input_text", "text": "Why 42? Prove it."}]}]


def test_a_delegated_task_is_answered_by_the_clients_commentary(scripted_live: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            await client.start(input=HARD, delegation={"type": "client"})
            created = await client.wait("session.delegation.created")
            delegation_id = created["delegation"]["id"]
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "that" in e["delta"]
            )
            append = {"delegation_id": delegation_id, "event_id": "t1"}
            think = {"type": "session.thinking.append", "content": "6 times 7.", **append}
            await client.send(think)
            await client.wait("session.thinking.appended")
            speak = {"type": "session.commentary.append", "content": "It is 42.", "event_id": "c1"}
            await client.send({**speak, "delegation_id": delegation_id})
            await client.wait("session.commentary.appended")
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "two" in e["delta"]
            )
            await client.send({**speak, "delegation_id": delegation_id, "event_id": "c2"})
            await client.wait("error")
            await client.send({**speak, "delegation_id": "deleg_unknown", "event_id": "c3"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "c3")
            await client.send({"type": "session.close"})
            await client.closed()
            return client

    with scripted_live(DELEGATE, WAIT, ANSWER) as address:
        client = asyncio.run(main(address))
    types = client.types()
    assert types.index("session.delegation.created") < types.index("session.thinking.appended")
    (created,) = client.of("session.delegation.created")
    assert created["delegation"]["target"] == "client"
    assert created["delegation"]["type"] == "delegation"
    assert "response_id" not in created["delegation"]  # omitted for client delegation
    assert created["offset_ms"] >= 0
    assert client.said() == "".join(WAIT + ANSWER)  # the tool call itself is never spoken
    errors = {e["client_event_id"]: e["error"] for e in client.of("error")}
    assert set(errors) == {"c2", "c3"}
    assert (errors["c2"]["code"], errors["c2"]["param"]) == ("delegation_finished", "delegation_id")
    assert errors["c3"]["code"] == "delegation_not_found"
    assert types[-1] == "session.closed"


BACKEND = "qwen2.5-coder-1.5b-instruct"


class SlowBackend(ScriptedLLM):
    """Answers once `release` is set (from the test's thread): a real backend model takes
    longer than the live model's acknowledgement, which an append would otherwise cancel."""

    def __init__(self, deltas: list[list[str]]) -> None:
        super().__init__(deltas)
        self.release = threading.Event()

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        while not self.release.is_set():  # noqa: ASYNC110 (set from another thread)
            await asyncio.sleep(0.02)
        async for delta in super().stream_chat(messages, params, request_id):
            yield delta


CONCLUSION = ["<think>Multiply ", "the factors.</think>", "It is 42, ", "six times seven."]


def test_server_delegation_runs_the_task_on_the_backend_model(scripted_live: Any) -> None:
    backend = SlowBackend([CONCLUSION])
    live = ScriptedLLM([DELEGATE, WAIT, ANSWER])
    delegation = {"type": "responses", "responses": {"model": BACKEND, "max_output_tokens": 64}}

    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            started = await client.start(input=HARD, delegation=delegation)
            assert started["session"]["delegation"]["responses"]["model"] == BACKEND
            await client.wait("session.delegation.created")
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "that" in e["delta"]
            )
            backend.release.set()  # the acknowledgement first, as with a real backend model
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "seven" in e["delta"]
            )
            update = {"delegation": {"type": "responses", "responses": {"model": "gpt-9"}}}
            await client.send({"type": "session.update", "session": update, "event_id": "u1"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "u1")
            await client.send({"type": "session.close"})
            await client.closed()
            return client

    with scripted_live(llm=live, backend=backend) as address:
        client = asyncio.run(main(address))
    (created,) = client.of("session.delegation.created")
    assert created["delegation"]["target"] == "responses"
    # the delegation names its Responses stream, as OpenAI's Delegation.response_id does
    streams = [e["event"] for e in client.of("response.event")]
    assert streams[0]["type"] == "response.created"
    assert created["delegation"]["response_id"] == streams[0]["response"]["id"]
    assert streams[-1]["response"]["id"] == created["delegation"]["response_id"]
    # the conclusion is said as the backend wrote it: no live model rewrites it
    assert "that" in client.said() and client.said().endswith("It is 42, six times seven.")
    (error,) = client.of("error")
    assert error["error"]["param"] == "session.delegation.responses.model"
    # the backend got the task; the live model got its conclusion, never its thinking
    (task_prompt,) = backend.prompts
    assert task_prompt[-1].content == "Prove it."
    assert not any("Multiply" in m.content for prompt in live.prompts for m in prompt)
    assert "Multiply" not in client.said()


class WatchingBackend(ScriptedLLM):
    """Records, when its task starts, how far the live model had got: its prompts so far
    and its streams still open."""

    def __init__(self, deltas: list[list[str]], live: ScriptedLLM) -> None:
        super().__init__(deltas)
        self.live = live
        self.live_at_start: tuple[int, set[str]] | None = None

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.live_at_start = (len(self.live.prompts), set(self.live.running))
        async for delta in super().stream_chat(messages, params, request_id):
            yield delta


def test_the_backend_starts_once_the_live_model_has_answered(scripted_live: Any) -> None:
    """On shared cores the live voice goes first: the backend's task waits until the
    live model's response (here the one that called `delegate`) is generated."""
    live = SlowLLM([DELEGATE, WAIT, ANSWER])  # 0.2 s a delta, as a real model takes
    backend = WatchingBackend([CONCLUSION], live)
    delegation = {
        "type": "responses",
        "responses": {"model": BACKEND, "max_output_tokens": 64},
        "acknowledgement_delay_ms": 60_000,  # no acknowledgement: one live response only
    }

    async def main(address: str) -> None:
        async with live_connection(address) as client:
            await client.start(input=HARD, delegation=delegation)
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "seven" in e["delta"]
            )
            await client.send({"type": "session.close"})
            await client.closed()

    with scripted_live(llm=live, backend=backend) as address:
        asyncio.run(main(address))
    assert backend.live_at_start == (1, set())  # the live response done, none still open
