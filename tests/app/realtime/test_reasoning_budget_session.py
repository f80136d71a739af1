"""A voice session bounds R1's thinking (`session.r1voice.max_reasoning_tokens`, 256 by
default): the engine cuts it, the client hears only the answer, `r1voice.reasoning.done`
says it was cut."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.llm import ChatMessage, GenerationParams
from app.protocol.server_events import (
    AudioDelta,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ReasoningDelta,
    ReasoningDone,
    ResponseDone,
    SessionUpdated,
    TextDelta,
)
from tests.app.llm.scripted import ScriptedLLM
from tests.conftest import ask, client_with, is_done, receive_until

INSTRUCTIONS = "Be brief."
QUESTION = "What is 2+2?"
MAX_TOKENS = 24
URL = "/v1/realtime?dialect=beta&r1voice_events=1"


def update(ws: Any, session: dict[str, Any]) -> list[dict[str, Any]]:
    ws.send_text(json.dumps({"type": "session.update", "session": session}))
    return receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def reference(components: Any, budget: int) -> tuple[str, str | None]:
    """What the server's LLM writes for this turn, alone (greedy: the same text), and why
    it stopped."""
    messages = [ChatMessage("system", INSTRUCTIONS), ChatMessage("user", QUESTION)]
    params = GenerationParams(max_tokens=MAX_TOKENS, max_reasoning_tokens=budget)

    async def main() -> tuple[str, str | None]:
        deltas = [d async for d in components.llm.stream_chat(messages, params, "ref")]
        return "".join(d.text for d in deltas), deltas[-1].finish_reason

    return asyncio.run(main())


def test_thinking_is_cut_and_only_the_answer_is_spoken(thinking_client: TestClient) -> None:
    components = thinking_client.app.state.server.components  # type: ignore[attr-defined]
    text, finish_reason = reference(components, 4)
    thinking, answer = text.split("</think>", 1)
    # the random model writes no thinking tag after the cut here (it may, at other seeds)
    assert "<think>" not in answer and "</think>" not in answer
    with thinking_client.websocket_connect(URL) as ws:
        created = ws.receive_json()
        assert created["session"]["r1voice"]["max_reasoning_tokens"] == 256  # the default
        budget = {"max_reasoning_tokens": 4}
        session = {"instructions": INSTRUCTIONS, "max_response_output_tokens": MAX_TOKENS}
        updated = update(ws, {**session, "r1voice": budget})
        assert updated[-1]["session"]["r1voice"]["max_reasoning_tokens"] == 4
        ask(ws, QUESTION)
        events = receive_until(ws, is_done)
    assert not of_type(events, "error")
    response = of_type(events, ResponseDone.TYPE)[0]["response"]
    # the random model writes to its MAX_TOKENS: cut there, so `incomplete` (not `completed`)
    assert response["status"] == ("incomplete" if finish_reason == "length" else "completed")
    item_id = response["output"][0]["id"]
    done = of_type(events, ReasoningDone.TYPE)
    assert [(e["item_id"], e["cut"]) for e in done] == [(item_id, True)]
    types = [e["type"] for e in events]
    reasoning = of_type(events, ReasoningDelta.TYPE)
    assert types.index(ReasoningDone.TYPE) > types.index(reasoning[-1]["type"])
    assert "".join(e["delta"] for e in reasoning) == thinking
    spoken = "".join(e["delta"] for e in of_type(events, AudioTranscriptDelta.TYPE))
    assert spoken == answer.lstrip()
    assert of_type(events, AudioTranscriptDone.TYPE)[0]["transcript"] == spoken
    assert "</think>" not in json.dumps([e for e in events if not e["type"].startswith("r1voice")])
    assert of_type(events, AudioDelta.TYPE)  # the answer was spoken


def scripted_turn(
    components: Any, llm: ScriptedLLM, url: str, session: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    client = client_with(dataclasses.replace(components, llm=llm))  # one app, one session
    with client.websocket_connect(url) as ws:
        ws.receive_json()
        updated = update(ws, session) if session is not None else []
        ask(ws, QUESTION, {"modalities": ["text"]})
        return updated, receive_until(ws, is_done)


@pytest.mark.parametrize(
    ("session", "budget"),
    [(None, 256), ({"r1voice": {"max_reasoning_tokens": None}}, None), ({"r1voice": {}}, 256)],
)
def test_every_answer_gets_the_sessions_budget(
    thinking_client: TestClient, session: dict[str, Any] | None, budget: int | None
) -> None:
    components = thinking_client.app.state.server.components  # type: ignore[attr-defined]
    llm = ScriptedLLM(["\nhm\n</think>", "\n\nIt is four."], opens_reasoning=True)
    updated, events = scripted_turn(components, llm, URL, session)
    assert [params.max_reasoning_tokens for _, params in llm.requests] == [budget]
    if updated:
        assert updated[-1]["session"]["r1voice"]["max_reasoning_tokens"] == budget
    assert [e["cut"] for e in of_type(events, ReasoningDone.TYPE)] == [False]
    assert "".join(e["delta"] for e in of_type(events, TextDelta.TYPE)) == "It is four."
    # a client that did not ask for r1voice events gets none
    _, plain = scripted_turn(components, llm, "/v1/realtime?dialect=beta", None)
    assert not [e for e in plain if e["type"].startswith("r1voice.")]


@pytest.mark.parametrize("bad", [-1, 2**40, "many"])
def test_a_bad_budget_is_one_error_naming_the_field(thinking_client: TestClient, bad: Any) -> None:
    with thinking_client.websocket_connect(URL) as ws:
        ws.receive_json()
        session = {"instructions": INSTRUCTIONS, "r1voice": {"max_reasoning_tokens": bad}}
        ws.send_text(json.dumps({"type": "session.update", "session": session}))
        events = update(ws, {})  # its reply shows the session as the refusal left it
    errors = of_type(events, "error")
    assert [e["error"]["param"] for e in errors] == ["session.r1voice.max_reasoning_tokens"]
    assert [e["type"] for e in events] == ["error", SessionUpdated.TYPE]  # one reply each
    assert events[-1]["session"]["instructions"] != INSTRUCTIONS  # refused whole
    assert events[-1]["session"]["r1voice"]["max_reasoning_tokens"] == 256


def test_a_ga_session_shows_the_budget_too(thinking_client: TestClient) -> None:
    with thinking_client.websocket_connect("/v1/realtime") as ws:  # GA: no beta dialect
        created = ws.receive_json()
        events = update(ws, {"type": "realtime", "r1voice": {"max_reasoning_tokens": 64}})
    assert created["session"]["r1voice"]["max_reasoning_tokens"] == 256
    assert events[-1]["session"]["r1voice"]["max_reasoning_tokens"] == 64
