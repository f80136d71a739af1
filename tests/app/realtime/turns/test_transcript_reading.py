"""How a transcript reads at a pause: which read as cut short, finished or a question."""

from __future__ import annotations

import pytest

from app.realtime.turns.transcript_reading import (
    is_lead_in,
    is_question,
    question_form,
    reads_finished,
    sounds_unfinished,
)


@pytest.mark.parametrize(
    "text",
    [
        "I would like to book a table for...",  # whisper's ellipsis on a trailing phrase
        "Can you tell me how to get to the f-",  # a word cut off
        "My favourite thing about the summer is",
        "Please remind me to call my sister when I get home after.",
        "So, um, the thing is,",
        "I went to the …",
    ],
)
def test_phrases_cut_short_read_unfinished(text: str) -> None:
    assert sounds_unfinished(text)


@pytest.mark.parametrize(
    "text",
    [
        "What time is it?",
        "What is it for?",  # a question may end on a preposition
        "Book a table for two.",
        "I would like to book a table for 2.",  # a number is a word (bug: "for" was last)
        "Thank you",
        "",
    ],
)
def test_finished_sentences_and_questions_do_not(text: str) -> None:
    assert not sounds_unfinished(text)


@pytest.mark.parametrize(
    "text",
    [
        "我们先吃饭，然后",  # a trailing connective
        "我们先吃饭然后。",  # ... though Whisper wrote a full stop after it
        "我今天没去上班因为",
        "你可以选红的或者",
        "我想买苹果和",  # 和 "and"
        "我今天没去上班，但是",
        "我们先吃饭然後",  # traditional characters, as Whisper may write them
        "我想说的就是",  # 就是 "is" after other words
        "我真正想知道的是",  # ... and 的是
        "我想问一下，那个",  # 那个 as "um": a clause of its own after another
        "我想买一个",  # 一 + a measure word: the indefinite article, the noun to come
        "我想借一本。",
        "你能给我推荐一家好吃的餐厅和一个",
        "他说：",  # a trailing colon or comma
        "我觉得，",
        "苹果、",
        "我想去 Paris and",  # mixed: English last, English rules
        "I went to Beijing 然后",  # mixed: Chinese last, Chinese rules
        "Can you recommend 一个",
    ],
)
def test_mandarin_phrases_cut_short_read_unfinished(text: str) -> None:
    assert sounds_unfinished(text)


@pytest.mark.parametrize(
    "text",
    [
        "你好吗",  # a question particle, with or without a question mark
        "你好吗。",
        "然后呢？",
        "然后呢",
        "我们走吧",
        "你是谁？",
        "我想去北京。",
        "今天很暖和",  # 和 ends 暖和 "warm", not "and"
        "对，就是。",  # 就是 alone: "exactly"
        "就是",
        "钱有的是。",  # 有的是 "plenty"
        "我要那个",  # 那个 after a verb: "that one"
        "那个。",  # alone: the answer "that one"
        "我要三个",  # other numbers: as often an answer, no rule
        "给我那一本",  # a demonstrative, an ordinal, a number before 一
        "我要第一个",
        "我要十一个",
        "一个。",  # the answer "one"
        "再试一次",  # 次 counts actions: no noun to come
        "and 我想去北京",  # mixed: the English word is not the last one
        "我想买一个 iPhone",
    ],
)
def test_finished_mandarin_sentences_and_questions_do_not(text: str) -> None:
    assert not sounds_unfinished(text)


@pytest.mark.parametrize(
    ("text", "finished"),
    [
        ("Book a table for two.", True),
        ("And so my fellow Americans.", False),  # a short lead-in
        ("It rained. So we stayed at home all day.", True),
        ("Name a fruit that is yellow", False),  # no sentence end
        ("我想去北京看看", True),  # Mandarin needs no mark
        ("所以我的同胞们。", False),
        ("I would like to book a table for...", False),
    ],
)
def test_which_transcripts_read_as_a_finished_sentence(text: str, finished: bool) -> None:
    assert reads_finished(text) is finished


def test_questions_by_their_mark_their_particle_or_their_wording() -> None:
    assert is_question("What time is it?") and is_question("你好吗") and is_question("是你吧。")
    assert not is_question("What time is it")
    assert question_form("How many days are there in a week")
    assert question_form("It rained. Where do you usually go")
    assert not question_form("Do you know")  # too short
    assert not question_form("When I get home")
    assert not question_form("Do your homework after dinner")


def test_lead_ins_are_short_and_open_with_a_connective() -> None:
    assert is_lead_in("And so my fellow Americans.") and is_lead_in("所以我们")
    assert not is_lead_in("So we stayed at home all day long.")  # over five words
    assert not is_lead_in("和平。")
