"""Choosing the LLM per session (`session.model`): a prepared bundled LLM loads when first
chosen, `session.updated` reports it (`r1voice.model`), the next answer comes from it;
OpenAI's model names keep the session's LLM; what cannot be used is refused by name and
the session keeps answering with its model."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from app.llm import LLMBackend
from app.llm.catalog import LLMCatalog
from app.protocol.server_events import SessionUpdated
from tests.conftest import ask, client_with, is_done, receive_until

QWEN = "qwen2.5-coder-0.5b-instruct"
SHORT = {"modalities": ["text"], "max_output_tokens": 8}
ANSWERED = ("completed", "incomplete")  # incomplete: the answer reached SHORT's 8 tokens


def _update(ws: Any, session: dict[str, Any], event_id: str = "ev_1") -> list[dict[str, Any]]:
    """Send a `session.update`; the events up to its one reply (`session.updated`, or
    an `error` when it is refused, and then it changed nothing)."""
    ws.send_text(json.dumps({"type": "session.update", "event_id": event_id, "session": session}))
    return receive_until(ws, lambda e: e["type"] in (SessionUpdated.TYPE, "error"))


def _state(ws: Any) -> dict[str, Any]:
    """The session as it is (the reply to an empty update)."""
    return _update(ws, {})[-1]["session"]  # type: ignore[no-any-return]


def _answer(ws: Any, text: str) -> dict[str, Any]:
    """A short text turn; its `response.done` response."""
    ask(ws, text, SHORT)
    return receive_until(ws, is_done)[-1]["response"]


def _requests(llm: LLMBackend) -> int:
    return int(llm.stats()["requests"])


def test_an_unknown_model_is_refused_naming_the_choices(shared_components: Any) -> None:
    default = shared_components.llm.model
    with client_with(shared_components).websocket_connect("/v1/realtime?dialect=beta") as ws:
        created = ws.receive_json()
        assert created["session"]["r1voice"]["model"] == default
        events = _update(ws, {"model": "llama-70b", "temperature": 0.7})
        state = _state(ws)
        response = _answer(ws, "Say hello.")
    [error] = events  # one reply
    assert error["type"] == "error" and error["error"]["event_id"] == "ev_1"
    assert error["error"]["code"] == "unsupported_model"
    assert error["error"]["param"] == "session.model"
    assert "'llama-70b' is not available" in error["error"]["message"]
    for name in shared_components.llms.names():
        assert name in error["error"]["message"]  # the choices, named
    assert state["r1voice"]["model"] == default
    assert state["temperature"] != 0.7  # refused whole: nothing of it applied
    assert response["status"] in ANSWERED


@pytest.mark.parametrize(
    ("url", "session"),
    [
        ("/v1/realtime", {"type": "realtime", "model": "gpt-realtime"}),
        ("/v1/realtime?dialect=beta", {"model": "gpt-4o-realtime-preview"}),
        ("/v1/realtime?dialect=beta", {"model": "r1voice"}),
    ],
)
def test_openai_model_names_keep_the_sessions_llm(
    shared_components: Any, url: str, session: dict[str, Any]
) -> None:
    with client_with(shared_components).websocket_connect(url) as ws:
        ws.receive_json()
        events = _update(ws, session)
    assert [e["type"] for e in events] == [SessionUpdated.TYPE]  # nothing refused
    assert events[-1]["session"]["r1voice"]["model"] == shared_components.llm.model


def test_a_chosen_llm_answers_the_next_turn_and_others_keep_theirs(with_qwen: Any) -> None:
    default = with_qwen.llm
    client = client_with(with_qwen)
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        events = _update(ws, {"model": QWEN, "instructions": "Answer in one short sentence."})
        assert [e["type"] for e in events] == [SessionUpdated.TYPE]  # loaded, nothing refused
        assert events[-1]["session"]["r1voice"]["model"] == QWEN
        qwen = with_qwen.llms.loaded(QWEN)
        assert qwen is not None
        before = (_requests(qwen), _requests(default))
        chosen = _answer(ws, "What is two plus two?")
        # OpenAI's names keep the chosen LLM (SDKs send them by default)
        kept = _update(ws, {"model": "gpt-realtime"})[-1]["session"]["r1voice"]["model"]
    assert chosen["status"] in ANSWERED
    assert (_requests(qwen), _requests(default)) == (before[0] + 1, before[1])
    assert kept == QWEN
    # the answer's series, under its own model's name
    series = client.get("/metrics").text.splitlines()
    assert [s for s in series if s.startswith("vllm:request_success_total") and QWEN in s]

    # a new session (on an app of its own: a TestClient's app shuts down with its socket)
    with client_with(with_qwen).websocket_connect("/v1/realtime?dialect=beta") as other:
        assert other.receive_json()["session"]["r1voice"]["model"] == default.model
        assert _answer(other, "Say hello.")["status"] in ANSWERED
        again = _update(other, {"model": QWEN})  # loaded already: the same engine
    assert (_requests(qwen), _requests(default)) == (before[0] + 1, before[1] + 1)
    assert with_qwen.llms.loaded(QWEN) is qwen
    assert again[-1]["session"]["r1voice"]["model"] == QWEN


def test_an_llm_that_fails_to_load_is_refused_and_the_session_keeps_its_own(
    shared_components: Any,
) -> None:
    def broken(name: str) -> LLMBackend:
        raise RuntimeError(f"cannot read '{name}': model.safetensors is truncated")

    catalog = LLMCatalog(shared_components.llm, load=broken)
    if QWEN not in catalog.names():
        pytest.skip(f"{QWEN} is not prepared")
    components = dataclasses.replace(shared_components, llms=catalog)
    default = shared_components.llm.model
    with client_with(components).websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        events = _update(ws, {"model": QWEN})
        state = _state(ws)
        response = _answer(ws, "Say hello.")  # and the session still answers
    [error] = events  # one reply
    assert error["error"]["code"] == "model_load_failed"
    assert error["error"]["param"] == "session.model"
    assert "model.safetensors is truncated" in error["error"]["message"]
    assert f"kept '{default}'" in error["error"]["message"]
    assert state["r1voice"]["model"] == default
    assert response["status"] in ANSWERED
