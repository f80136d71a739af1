"""The conversation's token budget: oldest whole turns go first, system items and the
instructions never do, and what is kept is an unchanged suffix."""

from __future__ import annotations

import asyncio

from app.llm import ChatMessage
from app.realtime.conversation import MESSAGE_OVERHEAD_TOKENS, Conversation, Item


async def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def conversation(*items: tuple[str, str]) -> Conversation:
    conv = Conversation()
    for i, (role, text) in enumerate(items):
        conv.add(Item(id=f"i{i}", role=role, text=text))
    return conv


def history(conv: Conversation, budget: int, pending: str | None = None):  # type: ignore[no-untyped-def]
    return asyncio.run(conv.history("be brief", budget, words, pending))


def cost(*texts: str) -> int:
    return sum(len(t.split()) + MESSAGE_OVERHEAD_TOKENS for t in texts)


TURNS = (
    ("user", "one two three"),
    ("assistant", "four five"),
    ("system", "note kept always"),
    ("user", "six seven"),
    ("assistant", "eight"),
    ("user", "nine ten eleven"),
)


def test_everything_fits() -> None:
    conv = conversation(*TURNS)
    out = history(conv, budget=10_000)
    assert out.dropped == []
    assert out.messages == [ChatMessage("system", "be brief")] + [
        ChatMessage(r, t) for r, t in TURNS
    ]


def test_oldest_turn_dropped_whole_and_system_items_kept() -> None:
    conv = conversation(*TURNS)
    everything = cost("be brief", *(t for _, t in TURNS))
    out = history(conv, budget=everything - 1)  # one token too many: drop the first turn
    assert [i.id for i in out.dropped] == ["i0", "i1"]
    assert [i.id for i in conv.items] == ["i2", "i3", "i4", "i5"]  # removed for good
    assert out.messages[0] == ChatMessage("system", "be brief")
    assert [m.content for m in out.messages[1:]] == [t for _, t in TURNS[2:]]


def test_latest_user_turn_is_kept_even_if_it_alone_does_not_fit() -> None:
    conv = conversation(*TURNS)
    out = history(conv, budget=1)
    assert [i.id for i in out.dropped] == ["i0", "i1", "i3", "i4"]
    assert [m.content for m in out.messages] == ["be brief", "note kept always", "nine ten eleven"]


def test_pending_user_text_counts_and_is_last() -> None:
    conv = conversation(("user", "a b"), ("assistant", "c d"))
    fits_without_pending = cost("be brief", "a b", "c d")
    out = history(conv, budget=fits_without_pending, pending="e f")
    assert [i.id for i in out.dropped] == ["i0", "i1"]
    assert out.messages == [ChatMessage("system", "be brief"), ChatMessage("user", "e f")]


def test_counts_are_cached_and_redone_when_text_changes() -> None:
    calls: list[list[str]] = []

    async def counting(texts: list[str]) -> list[int]:
        calls.append(texts)
        return await words(texts)

    conv = conversation(("user", "a b c"), ("assistant", "d e f g"))
    asyncio.run(conv.history("x", 1000, counting))
    asyncio.run(conv.history("x", 1000, counting))
    conv.items[1].text = "d e"  # a truncation after barge-in
    asyncio.run(conv.history("x", 1000, counting))
    item_calls = [c for c in calls if c != ["x"]]
    assert item_calls == [["a b c", "d e f g"], ["d e"]]


def _spoken(*turns: tuple[str, str, str | None]) -> Conversation:
    conv = Conversation()
    for i, (role, text, language) in enumerate(turns):
        conv.add(Item(id=f"i{i}", role=role, text=text, language=language))
    return conv


def test_the_instructions_name_the_language_the_user_was_heard_in() -> None:
    conv = _spoken(("user", "你好", "zh"), ("assistant", "你好！", None))
    system = asyncio.run(conv.history("be brief", 10_000, words)).messages[0].content
    assert (
        system
        == "be brief\nThe user is speaking Chinese (Mandarin, simplified characters): answer in Chinese (Mandarin, simplified characters)."
    )
    # the session's own language, or English when unset: nothing to say
    for expected, heard in (("zh", "zh"), (None, "en")):
        conv = _spoken(("user", "hi", heard))
        out = asyncio.run(conv.history("be brief", 10_000, words, expected_language=expected))
        assert out.messages[0].content == "be brief"


def test_an_early_answer_follows_the_language_of_the_turn_it_answers() -> None:
    """Bug: an early answer (to a turn not yet in the conversation) took the previous
    turn's language: an English question after a Mandarin one was answered in Chinese."""
    conv = _spoken(("user", "你好", "zh"), ("assistant", "你好！", None))
    out = asyncio.run(
        conv.history("be brief", 10_000, words, "What time is it?", pending_language="en")
    )
    assert out.messages[0].content == "be brief" and out.language == "en"
