"""`semantic_vad`: a pause ends the turn as soon as the turn model hears it complete.

Silero VAD still finds speech and pauses. At each pause (the VAD's early pause event,
~200 ms of silence) the turn model scores the utterance up to where the speech stopped;
complete -> the turn ends at the pause, and the early transcription and answer that
started there are released at once; incomplete -> keep listening: the VAD's own silence
window (the eagerness's maximum wait) ends a turn that never sounds complete, and speech
that resumes is scored again at its next pause. Pipecat's Smart Turn analyzer works the
same way (an idea taken from it, not its code).

Why the model hears no silence and is not re-scored as the pause grows: Smart Turn v3.2
takes trailing silence as a sign of a finished turn. Measured on 8 phrases cut before
their end (Piper and espeak-ng, `bench turns`' sentences), the share scored complete
(p >= 0.5) was 1/8 with no silence after the speech, 3/8 with 100 ms, 6/8 with 200 ms
and 7/8 with 400 ms; re-scoring every 400 ms of a pause therefore ended almost every
mid-sentence pause after 0.4-0.8 s, whatever the eagerness. Complete questions scored
>= 0.7 with no silence (one long sentence of eight scored low with any).

The words have a say too: the verdict waits for the early transcript (already running
from the same pause, so this costs the answer nothing: it needs those words to start).
"Complete" is overruled when Whisper marks the phrase as trailing off, with "..." or a
dash, or it ends on a word that cannot end an English sentence ("a table for", "what I
want to know is"); measured on `bench turns`' cut phrases, whisper-tiny.en wrote "..."
after 7 of 12 and a dash after one. "Incomplete" is overruled when Whisper heard a
question ("?"): the model's score of a finished question swings with 20 ms more or less
audio (Piper's "How many legs does a spider have?" scored 0.83, then 0.24 without its
last 20 ms; three syntheses of "How many days are there in a week?" all scored < 0.2),
and a turn the model never hears complete waits the eagerness's whole 4 s.
The final pass starts at the VAD's lull (~100 ms of silence), as with server_vad, so the
words are ready soon after the pause's verdict: `bench turns` (semantic auto, seeds 0-2)
split 5, 5 and 5 of 13 utterances so, against 3, 4 and 5 with the pass started at the
pause; `bench voice` (1 session) P50 729 ms against 948 ms.
Only for a client sending in real time: one sending faster (a file, a test) has already
sent what follows the pause, and a wait in wall-clock time would let the answer be shown
before that audio is heard (a resumed sentence then interrupts the answer instead of
continuing the turn), so there the model decides alone, in stream order, as before. The idea of judging the text is LiveKit's turn
detector's (which asks a small language model); this is a cheap rule, English only.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from app.audio import PIPELINE_RATE
from app.realtime.turns.turn import SpeechTurn

log = logging.getLogger("r1voice.turns")
COMPLETE = 0.5  # the model's probability above which an utterance is finished
TRANSCRIPT_WAIT_S = 2.0  # longer than this for the early words: the model decides alone
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


def sounds_unfinished(text: str) -> bool:
    """Whether a transcript reads as a phrase cut short (a question never does)."""
    text = text.strip()
    if not text or text.endswith("?"):
        return False
    if _TRAILING_OFF.search(text):
        return True
    words = re.findall(r"[a-z']+", text.lower())
    return bool(words) and words[-1] in _OPEN_ENDED


class TurnScorer(Protocol):
    """What semantic turn ends need of the turn model (SmartTurnModel, or a script)."""

    async def score(self, audio_16k: np.ndarray) -> float: ...


class SemanticEnd:
    """Scores each pause inline, in stream order: the verdict for a pause is reached before
    any later audio is looked at, so the same audio always gives the same turns however
    fast the client sends it (a score is ~10-50 ms on the turn model's own executor)."""

    def __init__(
        self,
        scorer: TurnScorer,
        audio_of: Callable[[SpeechTurn, int], np.ndarray],
        end_turn: Callable[[SpeechTurn, int], Awaitable[None]],
    ) -> None:
        self.scorer = scorer
        self.audio_of = audio_of  # the turn's audio up to a stream position
        self.end_turn = end_turn  # end `turn` at a stream position
        self.scores: list[float] = []  # of the current pause, for tests and logs
        self._pause: SpeechTurn | None = None  # the turn whose pause is being judged

    async def paused(
        self, turn: SpeechTurn, sample: int, words: asyncio.Task[str] | None = None
    ) -> None:
        """The VAD heard the speech of `turn` pause at stream position `sample`; `words`
        is the transcription of the speech up to there. The score reads the audio up to
        exactly there (not to wherever the client's last append happened to end), so the
        verdict does not depend on append sizes."""
        self._pause = turn
        self.scores = []
        await self._judge(turn, sample, words)

    def resumed(self) -> None:
        self._pause = None

    async def _judge(self, turn: SpeechTurn, sample: int, words: asyncio.Task[str] | None) -> None:
        try:
            probability = await self.scorer.score(self.audio_of(turn, sample))
        except Exception:  # a failed score leaves the silence window in charge
            log.exception("turn model failed")
            return
        self.scores.append(probability)
        log.debug(
            "turn %s: complete %.2f at the pause from %.2f s",
            turn.item_id,
            probability,
            sample / PIPELINE_RATE,
        )
        if not await _finished(probability, words):
            return
        if self._pause is turn:
            self._pause = None
            await self.end_turn(turn, sample)

    def close(self) -> None:
        self._pause = None


async def _finished(probability: float, words: asyncio.Task[str] | None) -> bool:
    """The verdict: the model's, unless the early transcript (once ready) says otherwise:
    words trailing off keep a "complete" turn open, a question ends an "incomplete" one."""
    if words is None:
        return probability >= COMPLETE
    await asyncio.wait({words}, timeout=TRANSCRIPT_WAIT_S)
    if not words.done() or words.cancelled() or words.exception() is not None:
        return probability >= COMPLETE
    text = words.result().strip()
    if probability >= COMPLETE and sounds_unfinished(text):
        log.debug("complete by the model, but the words trail off: %r", text[-40:])
        return False
    if probability < COMPLETE and text.endswith("?"):
        log.debug("incomplete by the model, but the words are a question: %r", text[-40:])
        return True
    return probability >= COMPLETE
