"""What the words and the turn model say together about a pause: end, doubt or go on.

Smart Turn hears how the speech sounds; Whisper's early transcript shows how it reads.
Where they agree the verdict is clear. Where they disagree (a sentence that reads
finished but sounds unfinished, or one that sounds finished but reads unpunctuated, as
Whisper writes a phrase cut short: "and so my fellow americans") the turn neither ends
at once nor waits the eagerness's whole maximum: it ends after a *doubt* wait unless the
speech resumes. The idea of a wait that follows the end-of-turn confidence is LiveKit's
turn detector's (min/max endpointing delay); the rules are ours, for English and
Mandarin (Chinese has no spaces: its rules look at the ends of the text and its last
clause, and count characters where English counts words).

Why both: in `r1voice bench turns` the model alone ended turns at mid-sentence pauses
it heard finished ("and so my fellow americans"), and heard most finished statements'
real ends unfinished, so "incomplete" waited the eagerness's whole maximum after them.
"""

from __future__ import annotations

import enum

from app.realtime.turns.patience import PATIENCE, Patience
from app.realtime.turns.transcript_reading import (
    is_lead_in,
    is_question,
    last_sentence,
    plainly_asks,
    question_form,
    reads_finished,
    sounds_unfinished,
)


class Verdict(enum.Enum):
    """END: the turn ends at the pause. DOUBT: it ends if the pause lasts the doubt
    wait; PLAIN: the shorter wait of words that plainly ask (Patience.plain_wait_ms).
    GO_ON: keep listening (the eagerness's maximum wait still ends it)."""

    END = "end"
    DOUBT = "doubt"
    PLAIN = "plain"
    GO_ON = "go_on"


def verdict(probability: float, text: str | None, patience: Patience | None = None) -> Verdict:
    """The model's probability that the speech up to the pause is a finished turn, and
    the early transcript of it (None: no words to go by, the model decides alone);
    `patience` (default: auto's) says which probabilities count as "complete" and "sure".

    | words \\ model          | sure | complete | incomplete |
    | trail off ("...", "for") | GO_ON | GO_ON   | GO_ON      |
    | a question ("?", "吗")    | END   | END     | END        |
    | a finished sentence, or  | END   | END     | DOUBT      |
    | a question with no "?" ("how many days are there in a week") |
    | no sentence end          | END   | DOUBT   | GO_ON      |
    | a short lead-in ("And so my fellow Americans.") | DOUBT | DOUBT | GO_ON |

    (`sure` is at or above `complete`; an eagerness without one has no "sure" column.)
    A DOUBT over words that plainly ask ("Tell me a joke.", "How many days are there in
    a week") is a PLAIN where the eagerness has a plain wait.
    """
    patience = patience or PATIENCE["auto"]
    sounds_done = probability >= patience.complete
    if text is None:
        return Verdict.END if sounds_done else Verdict.GO_ON
    text = text.strip()
    if sounds_unfinished(text):
        return Verdict.GO_ON
    if is_question(text):
        return Verdict.END
    if reads_finished(text) or question_form(text):
        return Verdict.END if sounds_done else _doubt(text, patience)
    if not sounds_done:
        return Verdict.GO_ON
    sure = patience.sure is not None and probability >= patience.sure
    last = last_sentence(text)
    return Verdict.END if sure and last and not is_lead_in(last) else _doubt(text, patience)


def _doubt(text: str, patience: Patience) -> Verdict:
    plain = patience.plain_wait_ms is not None and plainly_asks(text)
    return Verdict.PLAIN if plain else Verdict.DOUBT
