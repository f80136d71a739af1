"""How an eagerness (semantic_vad's `eagerness`) judges a pause: see turn_words.py."""

from __future__ import annotations

from dataclasses import dataclass

COMPLETE = 0.5  # the model's probability above which an utterance sounds finished


@dataclass(frozen=True)
class Patience:
    """How an eagerness judges a pause: the model's probability at or above which the
    speech sounds finished, and how long a doubtful pause lasts before the turn ends:
    past the longest natural mid-sentence pause (the issue's 0.6-1.5 s; JFK's rhetorical
    pauses are ~1 s) at medium, well short of the maximum wait (SEMANTIC_MAX_WAIT_MS).

    `sure`: the probability at or above which words with no sentence end ("Name a fruit
    that is yellow", as Whisper's early pass sometimes writes a finished sentence) end
    the turn at once, when they neither trail off nor are a short lead-in; None: they
    are always a doubt. It sits above what phrases cut short score when Whisper leaves
    them unpunctuated in `bench turns` (docs/benchmarks.md#bench-turns).

    `plain_wait_ms`: the shorter doubt after words that plainly ask ("How many days are
    there in a week", "Tell me a joke."; transcript_reading.plainly_asks) while the model
    hears them unfinished or not surely finished: a person who has asked a whole
    question waits for the answer, and the full doubt wait was the voice's P95 (#48).
    None: such words wait the whole doubt wait (`low`: people take their time)."""

    complete: float
    doubt_wait_ms: int
    sure: float | None = None
    plain_wait_ms: int | None = None


# `low` lets people take their time: only a sure "complete" ends a turn at once (Smart
# Turn scores complete sentences that were cut mid-utterance high too).
PATIENCE = {
    "low": Patience(0.9, 2500),
    "medium": Patience(COMPLETE, 1500, sure=0.95, plain_wait_ms=600),
    "auto": Patience(COMPLETE, 1500, sure=0.95, plain_wait_ms=600),
    "high": Patience(COMPLETE, 800, sure=0.8, plain_wait_ms=400),
}
