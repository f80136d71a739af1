"""What the words and the turn model say together about a pause: end, doubt or go on.

Smart Turn hears how the speech sounds; Whisper's early transcript shows how it reads.
Where they agree the verdict is clear. Where they disagree (a sentence that reads
finished but sounds unfinished, or one that sounds finished but reads unpunctuated, as
Whisper writes a phrase cut short: "and so my fellow americans") the turn neither ends
at once nor waits the eagerness's whole maximum: it ends after a *doubt* wait unless the
speech resumes. The idea of a wait that follows the end-of-turn confidence is LiveKit's
turn detector's (min/max endpointing delay); the rules are ours, English only.

Why both: in `r1voice bench turns` the model alone ended turns at mid-sentence pauses
it heard finished ("and so my fellow americans"), and heard most finished statements'
real ends unfinished, so "incomplete" waited the eagerness's whole maximum after them.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

COMPLETE = 0.5  # the model's probability above which an utterance sounds finished


@dataclass(frozen=True)
class Patience:
    """How an eagerness judges a pause: the model's probability at or above which the
    speech sounds finished, and how long a doubtful pause lasts before the turn ends:
    past the longest natural mid-sentence pause (the issue's 0.6-1.5 s; JFK's rhetorical
    pauses are ~1 s) at medium, well short of the maximum wait (SEMANTIC_MAX_WAIT_MS)."""

    complete: float
    doubt_wait_ms: int


# `low` lets people take their time: only a sure "complete" ends a turn at once (Smart
# Turn scores complete sentences that were cut mid-utterance high too).
PATIENCE = {
    "low": Patience(0.9, 2500),
    "medium": Patience(COMPLETE, 1500),
    "auto": Patience(COMPLETE, 1500),
    "high": Patience(COMPLETE, 800),
}
# Words an English sentence does not end on: articles, possessives, prepositions,
# conjunctions, "to" and the copula ("what I want to know is...").
_OPEN_ENDED = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "its",
        "this",
        "these",
        "those",
        "of",
        "to",
        "for",
        "with",
        "in",
        "on",
        "at",
        "by",
        "from",
        "about",
        "into",
        "onto",
        "over",
        "under",
        "after",
        "before",
        "between",
        "through",
        "and",
        "or",
        "but",
        "so",
        "because",
        "if",
        "than",
        "that",
        "which",
        "whether",
        "while",
        "when",
        "where",
        "is",
        "are",
        "was",
        "were",
        "am",
        "be",
    ]
)
_TRAILING_OFF = re.compile(r"(\.\.\.|…|[-–—,])\s*$")
# A short sentence that opens with one of these announces more to come ("And so, my
# fellow Americans, ..."; Whisper writes it "And so my fellow Americans." or not).
_LEAD_INS = frozenset(["and", "so", "but", "or", "because", "then", "well"])
LEAD_IN_WORDS = 5
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")


class Verdict(enum.Enum):
    """END: the turn ends at the pause. DOUBT: it ends if the pause lasts the doubt
    wait. GO_ON: keep listening (the eagerness's maximum wait still ends it)."""

    END = "end"
    DOUBT = "doubt"
    GO_ON = "go_on"


def sounds_unfinished(text: str) -> bool:
    """Whether a transcript reads as a phrase cut short (a question never does)."""
    text = text.strip()
    if not text or text.endswith("?"):
        return False
    if _TRAILING_OFF.search(text):
        return True
    words = re.findall(r"[a-z0-9']+", text.lower())  # "a table for 2." ends on "2"
    return bool(words) and words[-1] in _OPEN_ENDED


def reads_finished(text: str) -> bool:
    """Whether Whisper wrote the transcript as a finished sentence (., ! or ?) that is
    more than a short lead-in ("And so my fellow Americans.")."""
    text = text.strip()
    if not _SENTENCE_END.search(text) or sounds_unfinished(text):
        return False
    last = re.split(r"(?<=[.!?])\s+", text)[-1]
    words = re.findall(r"[a-z0-9']+", last.lower())
    return not (words and words[0] in _LEAD_INS and len(words) <= LEAD_IN_WORDS)


def verdict(probability: float, text: str | None, complete: float = COMPLETE) -> Verdict:
    """The model's probability that the speech up to the pause is a finished turn, and
    the early transcript of it (None: no words to go by, the model decides alone);
    `complete` is the probability that counts as "complete" (see Patience).

    | words \\ model          | complete | incomplete |
    | trail off ("...", "for") | GO_ON    | GO_ON      |
    | a question ("?")         | END      | END        |
    | a finished sentence      | END      | DOUBT      |
    | no sentence end, or a    | DOUBT    | GO_ON      |
    | short lead-in ("And so my fellow Americans.")   |
    """
    sounds_done = probability >= complete
    if text is None:
        return Verdict.END if sounds_done else Verdict.GO_ON
    text = text.strip()
    if sounds_unfinished(text):
        return Verdict.GO_ON
    if text.endswith("?"):
        return Verdict.END
    if reads_finished(text):
        return Verdict.END if sounds_done else Verdict.DOUBT
    return Verdict.DOUBT if sounds_done else Verdict.GO_ON
