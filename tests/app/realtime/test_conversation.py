"""The conversation's token budget: oldest whole turns go first, system items and the
instructions never do, and what is kept is an unchanged suffix; a history past its
budget drops to TRIM_LOW_WATER of it at once, so later turns keep its prefix."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from app.llm import ChatMessage
from app.realtime.conversation import (
    MESSAGE_OVERHEAD_TOKENS,
    TRIM_LOW_WATER,
    Conversation,
    Item,
)


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
    # one token too many, yet dropping the first turn is not enough: the history must
    # come down to the low-water mark (half of 71: the instructions, the system note and
    # the last turn)
    out = history(conv, budget=everything - 1)
    assert [i.id for i in out.dropped] == ["i0", "i1", "i3", "i4"]
    assert [i.id for i in conv.items] == ["i2", "i5"]  # removed for good
    assert out.messages[0] == ChatMessage("system", "be brief")
    assert [m.content for m in out.messages[1:]] == ["note kept always", "nine ten eleven"]
    assert out.tokens <= (everything - 1) * TRIM_LOW_WATER


def test_a_trim_keeps_its_cut_while_later_turns_fit() -> None:
    """Bug (issue 29): past its budget the history dropped just enough, the oldest turn
    each time, so every later turn's prompt began with another turn and the engine's
    prefix cache missed all but the instructions."""
    turn = "w " * 20  # with its "qN"/"aN": 29 tokens a message
    budget = cost("be brief") + 10 * cost(turn)  # ten messages of 28: four turns and a question
    conv = Conversation()
    prompts: list[list[ChatMessage]] = []
    dropped: list[list[str]] = []
    for n in range(10):
        conv.add(Item(id=f"u{n}", role="user", text=f"q{n} {turn}"))
        out = history(conv, budget)
        prompts.append(out.messages)
        dropped.append([i.id for i in out.dropped])
        assert out.tokens <= budget
        conv.add(Item(id=f"a{n}", role="assistant", text=f"a{n} {turn}"))
    # the sixth turn is the first past the budget: it drops to half at once ...
    assert dropped[:5] == [[]] * 5
    assert dropped[5] == ["u0", "a0", "u1", "a1", "u2", "a2", "u3", "a3"]
    # ... and the next turns fit again, each prompt the previous one grown at its end
    assert dropped[6:9] == [[], [], []]
    for before, after in itertools.pairwise(prompts[5:9]):
        assert after[: len(before)] == before
    # when the history outgrows the budget again, it is trimmed again, once
    assert dropped[9] == ["u4", "a4", "u5", "a5", "u6", "a6", "u7", "a7"]


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


def test_turns_past_the_budget_hit_the_engines_prefix_cache() -> None:
    """Issue 29: past the context every turn prefilled the whole history again (~34 s a
    turn). Through the path an answer takes (Conversation.history, then the bundled
    model's engine), the three turns after a trim are served from the prefix cache up to
    the previous turn's prompt: the cached tokens the engine reports, not a time."""
    from app.llm import GenerationParams
    from app.llm.embedded import EmbeddedBackend
    from engine.loading.model_store import bundled_llm_dir, is_complete

    if not is_complete(bundled_llm_dir("smollm2-135m-instruct")):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    backend = EmbeddedBackend("smollm2-135m-instruct")
    sentence = "Tell me more about the history of the old lighthouse by the harbour."
    answer = "The lighthouse was built long ago to guide the fishing boats home at night."

    async def call() -> list[tuple[int, int, int]]:
        conv, turns = Conversation(), []
        for n in range(14):
            conv.add(Item(id=f"u{n}", role="user", text=f"{n}. {sentence} " * 3))
            out = await conv.history("Be brief.", 600, backend.count_tokens)
            stream = backend.stream_chat(out.messages, GenerationParams(max_tokens=1), "t")
            final = [delta async for delta in stream][-1]
            assert final.cached_tokens is not None
            turns.append((len(out.dropped), final.prompt_tokens, final.cached_tokens))
            conv.add(Item(id=f"a{n}", role="assistant", text=f"{n}. {answer} " * 2))
        await backend.close()
        return turns

    turns = asyncio.run(call())
    block = backend.llm.stats().kv_block_size
    trims = [n for n, (dropped, _, _) in enumerate(turns) if dropped]
    assert trims and trims[0] + 3 < len(turns), turns  # the case is what its name says
    first = trims[0]
    for n in range(first + 1, first + 4):  # each turn's prompt begins with the last one
        previous_prompt, (_, _, cached) = turns[n - 1][1], turns[n]
        assert cached == previous_prompt // block * block, turns


def test_replace_puts_an_item_in_anothers_place_or_first() -> None:
    conv = conversation(("user", "a"), ("system", "note"), ("user", "b"))
    first = Item(id="s1", role="system", text="summary")
    assert conv.replace(None, first) is None  # none to replace: first
    assert [i.id for i in conv.items] == ["s1", "i0", "i1", "i2"]
    second = Item(id="s2", role="system", text="summary again")
    assert conv.replace(conv.items[2], second) == "i0"  # in its place, after i0
    assert [i.id for i in conv.items] == ["s1", "i0", "s2", "i2"]
