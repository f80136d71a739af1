"""The text half of a semantic turn end: which transcripts read as cut short, and the
verdict of the turn model and the words together."""

from __future__ import annotations

import pytest

from app.realtime.turns.turn_words import PATIENCE, Verdict, sounds_unfinished, verdict


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
    ("probability", "text", "expected"),
    [
        (0.9, "What time is it?", Verdict.END),
        (0.1, "What time is it?", Verdict.END),  # the model's score of questions swings
        (0.9, "I would like to book a table for two.", Verdict.END),
        (0.1, "I would like to book a table for two.", Verdict.DOUBT),  # reads finished only
        (0.9, "and so my fellow americans", Verdict.DOUBT),  # sounds finished only
        (0.9, "And so my fellow Americans.", Verdict.DOUBT),  # a lead-in, not a sentence
        (0.1, "And so my fellow Americans.", Verdict.GO_ON),
        (0.9, "It rained. So we stayed at home all day.", Verdict.END),  # not short
        (0.9, "So what?", Verdict.END),
        (0.1, "and so my fellow americans ask not", Verdict.GO_ON),
        (0.9, "Can you tell me how to get to the...", Verdict.GO_ON),
        (0.9, "What I really want to know is", Verdict.GO_ON),
        (0.9, None, Verdict.END),  # no words (a client streaming faster than real time)
        (0.1, None, Verdict.GO_ON),
        (0.9, 'He said "stop."', Verdict.END),
    ],
)
def test_the_model_and_the_words_give_one_verdict(
    probability: float, text: str | None, expected: Verdict
) -> None:
    assert verdict(probability, text) is expected


def test_low_eagerness_needs_a_surer_model_to_end_at_once() -> None:
    """`low` lets people take their time: a finished sentence the model scores 0.85
    (espeak-ng's "I would like to book a table for two." cut mid-utterance) is a doubt
    there, and ends at once at auto."""
    text = "I would like to book a table for two."
    assert verdict(0.85, text, PATIENCE["low"].complete) is Verdict.DOUBT
    assert verdict(0.85, text, PATIENCE["auto"].complete) is Verdict.END
    assert verdict(0.95, text, PATIENCE["low"].complete) is Verdict.END
    waits = [PATIENCE[e].doubt_wait_ms for e in ("high", "medium", "low")]
    assert waits == sorted(waits) and PATIENCE["auto"] == PATIENCE["medium"]
