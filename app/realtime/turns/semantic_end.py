"""`semantic_vad`: a pause ends the turn as soon as the turn model hears it complete.

Silero VAD still finds speech and pauses. At each pause (the VAD's pause event, after
`VADConfig.early_ms` of silence) the turn model scores the utterance up to where the
speech stopped; complete -> the turn ends at the pause, and the early transcription and
answer that started there are released at once; incomplete -> keep listening: the VAD's
own silence window (the eagerness's maximum wait) ends a turn that never sounds
complete, and speech that resumes is scored again at its next pause. Pipecat's Smart
Turn analyzer works the same way (an idea taken from it, not its code).

Why the model hears no silence and is not re-scored as the pause grows: Smart Turn v3.2
takes trailing silence as a sign of a finished turn. Measured on 8 phrases cut before
their end (Piper and espeak-ng, `bench turns`' sentences), the share scored complete
(p >= 0.5) was 1/8 with no silence after the speech, 3/8 with 100 ms, 6/8 with 200 ms
and 7/8 with 400 ms; re-scoring every 400 ms of a pause therefore ended almost every
mid-sentence pause after 0.4-0.8 s, whatever the eagerness. Complete questions scored
>= 0.7 with no silence (one long sentence of eight scored low with any).

The words have a say too: the verdict waits for the early transcript (the final pass,
started at the VAD's lull before the pause as with server_vad, so this costs the answer
nothing: it needs those words to start), and the model's score and the words together
give END, DOUBT or GO_ON (the table is in turn_words.verdict): words trailing off
("...", a dash, "a table for") keep the turn open whatever the model hears
(whisper-tiny.en often ends a phrase cut short with "..."); a question ends it (the
model's score of a finished question swings with 20 ms more or less audio: Piper's "How
many legs does a spider have?" scored 0.83, then 0.24 without its last 20 ms); where
model and words disagree, the VAD is told to end the turn once the pause lasts the
eagerness's doubt wait (`Patience.doubt_wait_ms`) instead of its maximum
(`SEMANTIC_MAX_WAIT_MS`). Starting the pass at the lull has the words ready soon after
the verdict, for a quicker answer; a few more utterances then end at a mid-sentence
pause than with the pass started at the pause.
Only for a client sending in real time: one sending faster (a file, a test) has already
sent what follows the pause, and a wait in wall-clock time would let the answer be shown
before that audio is heard (a resumed sentence then interrupts the answer instead of
continuing the turn), so there the model decides alone, in stream order, as before.
The idea of judging the text is LiveKit's turn detector's (which asks a small language
model); this is a cheap rule, for English and Mandarin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from app.audio import PIPELINE_RATE
from app.realtime.turns.patience import PATIENCE, Patience
from app.realtime.turns.turn import SpeechTurn
from app.realtime.turns.turn_words import Verdict, verdict

log = logging.getLogger("r1voice.turns")
TRANSCRIPT_WAIT_S = 2.0  # longer than this for the early words: the model decides alone


class TurnScorer(Protocol):
    """What semantic turn ends need of the turn model (SmartTurnModel, or a script)."""

    async def score(self, audio_16k: np.ndarray) -> float: ...


class SemanticEnd:
    """Scores each pause inline, in stream order: the verdict for a pause is reached before
    any later audio is looked at, so the same audio always gives the same turns however
    fast the client sends it (a score is one short ONNX run on the turn model's executor)."""

    def __init__(
        self,
        scorer: TurnScorer,
        end_turn: Callable[[SpeechTurn, int], Awaitable[None]],
        end_pause_after: Callable[[int, int], Awaitable[None]],
    ) -> None:
        self.scorer = scorer
        self.end_turn = end_turn  # end `turn` at a stream position
        # end the turn if the pause that began at a stream position lasts this many ms
        self.end_pause_after = end_pause_after
        self.scores: list[float] = []  # of the current pause, for tests and logs
        self.verdicts: list[Verdict] = []
        self._pause: SpeechTurn | None = None  # the turn whose pause is being judged
        self._early: tuple[SpeechTurn, int, asyncio.Future[float]] | None = None  # prescore

    async def paused(
        self,
        turn: SpeechTurn,
        sample: int,
        audio: np.ndarray,
        words: asyncio.Task[str] | None = None,
        patience: Patience = PATIENCE["auto"],
    ) -> None:
        """The VAD heard the speech of `turn` pause at stream position `sample`; `audio` is
        the turn's audio up to exactly there (not to wherever the client's last append
        happened to end, so the verdict does not depend on append sizes) and `words` its
        transcription. `patience` is the eagerness's (see patience.py): a doubtful pause
        ends the turn once it has lasted its doubt wait."""
        self._pause = turn
        self.scores, self.verdicts = [], []
        await self._judge(turn, sample, audio, words, patience)

    def prescore(self, turn: SpeechTurn, sample: int, audio: np.ndarray) -> None:
        """The VAD heard a lull in `turn`'s speech at `sample` (see early_answers.py): score
        the speech up to there now. The pause that follows the lull judges the same audio,
        so its verdict is the same, and comes sooner; scored at the pause instead, the
        model's pass ran beside the early answer's prefill and slowed both (issue 48)."""
        self._drop_early()
        score = asyncio.ensure_future(self.scorer.score(audio))
        score.add_done_callback(_retrieved)  # a lull the speech goes on from is not judged
        self._early = (turn, sample, score)

    def resumed(self) -> None:
        self._pause = None
        self._drop_early()

    def _drop_early(self) -> None:
        """A lull's score no pause will use: cancelled, so a stale score queued on the
        turn model's executor (shared by all sessions) never runs."""
        if self._early is not None:
            self._early[2].cancel()
            self._early = None

    async def _judge(
        self,
        turn: SpeechTurn,
        sample: int,
        audio: np.ndarray,
        words: asyncio.Task[str] | None,
        patience: Patience,
    ) -> None:
        early, self._early = self._early, None
        if early is not None and not (early[0] is turn and early[1] == sample):
            early[2].cancel()  # another lull's
            early = None
        try:
            if early is not None:
                probability = await early[2]
            else:
                probability = await self.scorer.score(audio)
        except Exception:  # a failed score leaves the silence window in charge
            log.exception("turn model failed")
            return
        self.scores.append(probability)
        text = await _words(words)
        decided = verdict(probability, text, patience)
        self.verdicts.append(decided)
        log.debug(
            "turn %s: the pause at %.2f s sounds %.2f complete, reads %r: %s",
            turn.item_id,
            sample / PIPELINE_RATE,
            probability,
            text if text is None else text[-60:],
            decided.value,
        )
        if self._pause is not turn:  # the speech resumed while the words were awaited
            return
        if decided is Verdict.END:
            self._pause = None
            await self.end_turn(turn, sample)
        elif decided is Verdict.DOUBT:
            await self.end_pause_after(sample, patience.doubt_wait_ms)
        elif decided is Verdict.PLAIN and patience.plain_wait_ms is not None:
            await self.end_pause_after(sample, patience.plain_wait_ms)

    def close(self) -> None:
        self._pause = None
        self._drop_early()


def _retrieved(score: asyncio.Future[float]) -> None:
    if not score.cancelled():
        score.exception()  # logged where it is awaited; never "never retrieved"


async def _words(words: asyncio.Task[str] | None) -> str | None:
    """The early transcript once ready; None when there is none to wait for, or it
    failed or took too long (the model then decides alone)."""
    if words is None:
        return None
    await asyncio.wait({words}, timeout=TRANSCRIPT_WAIT_S)
    if not words.done() or words.cancelled() or words.exception() is not None:
        return None
    return words.result()
