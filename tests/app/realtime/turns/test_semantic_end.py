"""The text half of a semantic turn end: which transcripts read as cut short."""

from __future__ import annotations

import pytest

from app.realtime.turns.semantic_end import sounds_unfinished


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
        "Thank you",
        "",
    ],
)
def test_finished_sentences_and_questions_do_not(text: str) -> None:
    assert not sounds_unfinished(text)
