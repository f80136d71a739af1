"""The running summary of a long call (a scripted LLM): what it is asked, where the summary
goes, the events that tell the client, a second fold on the first, `drop`, failures,
and the priority it asks for (below the session's answers)."""

from __future__ import annotations

import asyncio
from typing import Any

from app.llm import LLMBackendError
from app.protocol.server_events import Error, ItemCreated, ItemDeleted, ServerEvent
from app.realtime.conversation import Conversation, Item
from app.realtime.history_summary import (
    FOLD_CHUNK_TOKENS,
    SUMMARY_LEAD,
    SUMMARY_MAX_TOKENS,
    SUMMARY_PRIORITY_OFFSET,
    HistorySummary,
)
from app.realtime.session_config import SessionConfig
from tests.fakes import ScriptedLLM


def config(history: str = "summarize") -> SessionConfig:
    cfg = SessionConfig(instructions="be brief", voice="v", max_output_tokens=64, temperature=0)
    cfg.history = history  # type: ignore[assignment]
    return cfg


def turns(*texts: str, start: int = 0) -> list[Item]:
    roles = ("user", "assistant")
    return [Item(id=f"t{start + i}", role=roles[i % 2], text=t) for i, t in enumerate(texts)]


class Call:
    """A conversation left with `kept` items, a summary and what it sent."""

    def __init__(self, llm: ScriptedLLM, history: str = "summarize") -> None:
        self.llm = llm
        self.conversation = Conversation()
        self.sent: list[ServerEvent] = []
        self.summary = HistorySummary(config(history), self.conversation, self.sent.append)

    def keep(self, *items: Item) -> None:
        for item in items:
            self.conversation.add(item)

    async def fold(self, dropped: list[Item]) -> None:
        self.summary.fold(dropped, self.llm)
        await self.summary.settled()

    def told(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for e in self.sent:
            if isinstance(e, ItemCreated):
                out.append(("created", (e.previous_item_id, e.item["role"])))
            elif isinstance(e, ItemDeleted):
                out.append(("deleted", e.item_id))
            elif isinstance(e, Error):
                out.append((e.TYPE, e.code))
            else:
                out.append((e.TYPE, None))
        return out


def test_the_dropped_turns_become_the_first_item_a_system_summary() -> None:
    async def run() -> Call:
        call = Call(ScriptedLLM(["The user is Ada ", "from Lyon; ", "her number is 42."]))
        call.keep(*turns("what next?", start=10))
        await call.fold(turns("I am Ada.", "Hi Ada!", "I live in Lyon.", "Nice."))
        return call

    call = asyncio.run(run())
    first = call.conversation.items[0]
    assert (first.role, first.text) == (
        "system",
        SUMMARY_LEAD + "The user is Ada from Lyon; her number is 42.",
    )
    assert [i.id for i in call.conversation.items[1:]] == ["t10"]
    assert call.told() == [("created", (None, "system"))]
    wire = call.sent[0]["item"]
    assert wire["content"] == [{"type": "input_text", "text": first.text}]
    system, task = call.llm.prompts[0]
    for kept in ("name", "number", "place", "asked for"):  # what the summary must keep
        assert kept in system.content
    assert task.content == (
        "Turns:\nUser: I am Ada.\nAssistant: Hi Ada!\nUser: I live in Lyon.\n"
        "Assistant: Nice.\n\nWrite the new summary."
    )


def test_it_asks_below_the_sessions_answers_and_bounded() -> None:
    call = Call(ScriptedLLM(["ok"]))
    asyncio.run(call.fold(turns("a", "b")))
    (params,) = call.llm.params
    assert params.priority == config().priority + SUMMARY_PRIORITY_OFFSET > config().priority
    assert params.max_tokens == SUMMARY_MAX_TOKENS


def test_a_second_fold_rewrites_the_summary_in_its_place() -> None:
    async def run() -> Call:
        call = Call(ScriptedLLM([["Ada, Lyon."], ["Ada, Lyon, 42."]]))
        call.keep(*turns("later", start=10))
        await call.fold(turns("I am Ada.", "Hi!"))
        await call.fold(turns("My number is 42.", "Noted.", start=2))
        return call

    call = asyncio.run(run())
    first, second = (e.item["id"] for e in call.sent if isinstance(e, ItemCreated))
    assert call.told() == [
        ("created", (None, "system")),
        ("deleted", first),
        ("created", (None, "system")),
    ]
    assert [i.id for i in call.conversation.items] == [second, "t10"]
    assert call.conversation.items[0].text == SUMMARY_LEAD + "Ada, Lyon, 42."
    assert call.llm.prompts[1][1].content.startswith(
        "Earlier summary: Ada, Lyon.\n\nTurns:\nUser: My number is 42."
    )


def test_folds_in_a_row_each_build_on_the_one_before() -> None:
    """A second trim while the first summary is still being written waits for it."""

    async def run() -> Call:
        call = Call(ScriptedLLM([["first."], ["second."]]))
        call.summary.fold(turns("one", "two"), call.llm)
        call.summary.fold(turns("three", "four", start=2), call.llm)
        await call.summary.settled()
        return call

    call = asyncio.run(run())
    assert call.llm.prompts[1][1].content.startswith("Earlier summary: first.")
    assert [i.text for i in call.conversation.items] == [SUMMARY_LEAD + "second."]


def test_a_summary_the_client_deleted_is_not_deleted_again() -> None:
    async def run() -> Call:
        call = Call(ScriptedLLM([["first."], ["second."]]))
        await call.fold(turns("one", "two"))
        call.conversation.delete(call.conversation.items[0].id)
        await call.fold(turns("three", "four", start=2))
        return call

    call = asyncio.run(run())
    assert [kind for kind, _ in call.told()] == ["created", "created"]
    assert not call.llm.prompts[1][1].content.startswith("Earlier summary")


def test_drop_mode_writes_nothing() -> None:
    call = Call(ScriptedLLM(["never"]), history="drop")
    call.keep(*turns("kept"))
    asyncio.run(call.fold(turns("gone", "too")))
    assert call.llm.prompts == [] and call.sent == []
    assert [i.id for i in call.conversation.items] == ["t0"]


def test_a_failed_summary_leaves_the_drop_and_says_so() -> None:
    for llm in (ScriptedLLM(fail=LLMBackendError("the model is gone")), ScriptedLLM([" "])):
        call = Call(llm)
        call.keep(*turns("kept"))
        asyncio.run(call.fold(turns("gone", "too")))
        assert call.told() == [("error", "summary_failed")]
        assert [i.id for i in call.conversation.items] == ["t0"]
        assert "dropped without one" in call.sent[0]["error"]["message"]


def test_turns_past_the_models_context_leave_the_oldest_out() -> None:
    llm = ScriptedLLM(["short."], context_length=SUMMARY_MAX_TOKENS + 120)
    call = Call(llm)
    many = turns(*(f"turn {n} " + "word " * 20 for n in range(8)))
    asyncio.run(call.fold(many))
    task = llm.prompts[0][1].content
    assert "turn 7" in task and "turn 0 " not in task
    assert call.conversation.items[0].text == SUMMARY_LEAD + "short."


def test_closing_stops_a_summary_being_written() -> None:
    async def run() -> Call:
        call = Call(ScriptedLLM(["never"], hold=asyncio.Event()))
        call.summary.fold(turns("a", "b"), call.llm)
        await call.llm.opened.wait()
        await call.summary.close()
        call.summary.fold(turns("c", "d"), call.llm)  # closed: nothing more starts
        return call

    call = asyncio.run(run())
    assert call.sent == [] and call.llm.running == set() and len(call.llm.prompts) == 1


def test_many_dropped_turns_are_summarised_a_few_at_a_time() -> None:
    """Half a context of turns in one request lost facts a small model kept when it
    summarised a few turns at a time, each request on the summary of those before."""
    llm = ScriptedLLM([["after 1."], ["after 2."], ["after 3."]])
    call = Call(llm)
    long_turn = "word " * (FOLD_CHUNK_TOKENS // 2 - 1)
    asyncio.run(call.fold(turns(*(f"t{n} {long_turn}" for n in range(6)))))
    tasks = [prompt[1].content for prompt in llm.prompts]
    assert len(tasks) == 3  # two turns a request
    assert tasks[0].startswith("Turns:\nUser: t0 ") and "t2 " not in tasks[0]
    assert tasks[1].startswith("Earlier summary: after 1.\n\nTurns:\nUser: t2 ")
    assert tasks[2].startswith("Earlier summary: after 2.\n\nTurns:\nUser: t4 ")
    assert call.told() == [("created", (None, "system"))]  # one summary lands
    assert call.conversation.items[0].text == SUMMARY_LEAD + "after 3."
