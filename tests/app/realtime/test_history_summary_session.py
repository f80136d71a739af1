"""A long call's memory over the real WebSocket with the bundled model, behind a context
small enough that a few typed turns outgrow it: the oldest turns are deleted, then the
summary is added (`summarize`); only deleted (`drop`); a failed summary is an `error` and
leaves the drop; an unknown mode is refused naming the field; and a voice turn's request
is admitted by the engine before a summary request that was queued first."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest

from app.llm import ChatMessage, GenerationParams, LLMBackend, LLMBackendError, LLMDelta
from app.protocol.server_events import ItemDeleted, ItemDone, ResponseDone, SessionUpdated, ga
from app.realtime.history_summary import SUMMARY_LEAD
from tests.conftest import ask, client_with, is_done, receive_until

CONTEXT = 600  # tokens: about eight of the turns below
ANSWER_TOKENS = 16
MAX_TURNS = 20


class NarrowContext(LLMBackend):
    """The bundled model behind a smaller context; records each request; fails summary
    requests when told to."""

    name = "embedded"

    def __init__(self, inner: LLMBackend, fail_summaries: bool = False) -> None:
        self.inner, self.model, self.context_length = inner, inner.model, CONTEXT
        self.fail_summaries = fail_summaries
        self.requests: list[tuple[str, list[ChatMessage]]] = []

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.requests.append((request_id, messages))
        if self.fail_summaries and request_id.startswith("summary"):
            raise LLMBackendError("the summariser is down")
        stream = self.inner.stream_chat(messages, params, request_id)
        async with contextlib.aclosing(stream):
            async for delta in stream:
                yield delta

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.inner.count_tokens(texts)

    def warmup(self) -> None:
        return None

    def summaries(self) -> list[list[ChatMessage]]:
        return [messages for rid, messages in self.requests if rid.startswith("summary")]


def turn_text(n: int) -> str:
    return (
        f"Turn {n}. Tell me about the old lighthouse by the harbour, its keeper, the "
        "fishing boats and the winter storms of the northern sea."
    )


@contextlib.contextmanager
def call(components: Any, llm: LLMBackend, history: str | None) -> Iterator[Any]:
    client = client_with(dataclasses.replace(components, llm=llm))
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        session: dict[str, Any] = {"type": "realtime", "output_modalities": ["text"]}
        if history is not None:
            session["r1voice"] = {"history": history}
        ws.send_text(json.dumps({"type": "session.update", "session": session}))
        updated = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)[-1]
        assert updated["session"]["r1voice"]["history"] == (history or "summarize")
        yield ws


def talk_until_trimmed(ws: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Typed turns until one's history drops items: the ids of the items the
    conversation held, in order, and every event up to that turn's `response.done`."""
    ids: list[str] = []
    for n in range(MAX_TURNS):
        ask(ws, turn_text(n), {"max_output_tokens": ANSWER_TOKENS})
        events = receive_until(ws, is_done)
        ids += [e["item"]["id"] for e in events if e["type"] == ga.ITEM_ADDED]
        if any(e["type"] == ItemDeleted.TYPE for e in events):
            return ids, events
    raise AssertionError(f"{MAX_TURNS} turns never outgrew {CONTEXT} tokens")


def deleted(events: list[dict[str, Any]]) -> list[str]:
    return [e["item_id"] for e in events if e["type"] == ItemDeleted.TYPE]


def system_items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["item"] for e in events if e["type"] == ga.ITEM_ADDED and e["item"]["role"] == "system"
    ]


def is_summary(event: dict[str, Any]) -> bool:
    return bool(event["type"] == ga.ITEM_ADDED and event["item"]["role"] == "system")


def test_summarize_deletes_the_oldest_turns_then_adds_their_summary(
    shared_components: Any,
) -> None:
    llm = NarrowContext(shared_components.llm)
    with call(shared_components, llm, None) as ws:  # summarize is the default
        ids, events = talk_until_trimmed(ws)
        events += receive_until(ws, is_summary)
        done = ws.receive_json()
        ask(ws, "And what was my first question?", {"max_output_tokens": ANSWER_TOKENS})
        after = receive_until(ws, is_done)
    gone = deleted(events)
    assert gone == ids[: len(gone)] and len(gone) >= 2  # the oldest turns, in order
    types = [e["type"] for e in events]
    summary = events[-1]
    assert types.index(ResponseDone.TYPE) < len(types) - 1  # written after the answer
    assert max(i for i, t in enumerate(types) if t == ItemDeleted.TYPE) < len(types) - 1
    assert summary["previous_item_id"] is None  # the conversation's first item
    text = summary["item"]["content"][0]["text"]
    assert summary["item"]["content"][0]["type"] == "input_text" and text.startswith(SUMMARY_LEAD)
    assert (done["type"], done["item"]["id"]) == (ItemDone.TYPE, summary["item"]["id"])
    (asked,) = llm.summaries()  # what it summarised: the turns deleted
    assert "Turn 0." in asked[1].content
    # the next answer's prompt holds the summary, after the instructions
    assert after[-1]["response"]["status"] in ("completed", "incomplete")
    prompt = llm.requests[-1][1]
    assert prompt[1] == ChatMessage("system", text)


def test_drop_only_deletes(shared_components: Any) -> None:
    llm = NarrowContext(shared_components.llm)
    with call(shared_components, llm, "drop") as ws:
        ids, events = talk_until_trimmed(ws)
        ask(ws, "One more.", {"max_output_tokens": ANSWER_TOKENS})
        events += receive_until(ws, is_done)
    gone = deleted(events)
    assert gone == ids[: len(gone)] and gone
    assert system_items(events) == [] and llm.summaries() == []
    assert all(m.role != "system" for m in llm.requests[-1][1][1:])


def test_a_failed_summary_is_an_error_and_leaves_the_drop(shared_components: Any) -> None:
    llm = NarrowContext(shared_components.llm, fail_summaries=True)
    with call(shared_components, llm, "summarize") as ws:
        ids, events = talk_until_trimmed(ws)
        events += receive_until(ws, lambda e: e["type"] == "error")
        ask(ws, "Are you still there?", {"max_output_tokens": ANSWER_TOKENS})
        after = receive_until(ws, is_done)
    error = events[-1]["error"]
    assert (error["code"], error["type"]) == ("summary_failed", "server_error")
    gone = deleted(events)
    assert gone == ids[: len(gone)] and gone
    assert system_items(events + after) == []
    assert after[-1]["response"]["status"] in ("completed", "incomplete")
    kept = [m.content for m in llm.requests[-1][1][1:]]  # as a drop leaves it
    assert not any("Turn 0." in text for text in kept)


@pytest.mark.parametrize("bad", ["forget", "SUMMARIZE", 1, None])
def test_an_unknown_history_mode_is_refused_naming_the_field(
    shared_components: Any, bad: Any
) -> None:
    client = client_with(shared_components)
    with client.websocket_connect("/v1/realtime") as ws:
        created = ws.receive_json()["session"]
        update = {"type": "realtime", "r1voice": {"history": bad}}
        ws.send_text(json.dumps({"type": "session.update", "session": update}))
        probe = {"type": "realtime"}  # its reply shows the session as the refusal left it
        ws.send_text(json.dumps({"type": "session.update", "session": probe}))
        events = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
    errors = [(e["error"]["code"], e["error"]["param"]) for e in events if e["type"] == "error"]
    assert errors == [("invalid_value", "session.r1voice.history")]
    assert [e["type"] for e in events] == ["error", SessionUpdated.TYPE]  # one reply each
    assert created["r1voice"]["history"] == events[-1]["session"]["r1voice"]["history"]
    assert created["r1voice"]["history"] == "summarize"


def test_a_voice_turn_is_admitted_before_a_summary_queued_first(
    shared_components: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By the order in which the engine admits requests, not by time: the summary's
    request is held back from the engine until the next voice turn's request is queued
    behind it; then both wait, the summary first, and the voice turn is admitted first."""
    inner = shared_components.llm
    if not hasattr(inner, "llm"):
        pytest.skip("the engine's admission order is the embedded backend's")
    engine = inner.llm.engine
    added: list[str] = []
    admitted: list[str] = []
    real_add, real_pop = engine.add_request, engine.scheduler._pop_waiting
    held = threading.Event()

    def add_request(prompt: Any, params: Any, request_id: str, *args: Any) -> Any:
        if request_id.startswith("summary"):  # on the engine thread: hold until more comes
            held.set()
            deadline = time.monotonic() + 120
            while inner.llm._commands.empty() and time.monotonic() < deadline:
                time.sleep(0.005)
        added.append(request_id)
        return real_add(prompt, params, request_id, *args)

    def pop_waiting(seq: Any) -> None:
        admitted.append(seq.request_id)
        real_pop(seq)

    monkeypatch.setattr(engine, "add_request", add_request)
    monkeypatch.setattr(engine.scheduler, "_pop_waiting", pop_waiting)
    llm = NarrowContext(inner)
    with call(shared_components, llm, "summarize") as ws:
        talk_until_trimmed(ws)
        assert held.wait(120), "no summary request reached the engine"
        ask(ws, "What now?", {"max_output_tokens": ANSWER_TOKENS})
        events = receive_until(ws, is_done)
        voice = events[-1]["response"]["id"]
        receive_until(ws, is_summary)
    summary = next(rid for rid in added if rid.startswith("summary"))
    assert added.index(summary) < added.index(voice)  # the summary was queued first
    assert admitted.index(voice) < admitted.index(summary)  # the voice turn went first
