"""`semantic_vad`: a pause ends the turn as soon as the turn model hears it complete.

Silero VAD still finds speech and pauses. At each pause (the VAD's early pause event,
~200 ms of silence) the turn model scores the utterance; complete -> the turn ends at
the pause, and the early transcription and answer that started there are released at
once; incomplete -> keep listening and score again as the pause grows. The VAD's own
silence window (the eagerness's maximum wait) ends a turn that never sounds complete.
Pipecat's Smart Turn analyzer works the same way (an idea taken from it, not its code).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from app.audio import PIPELINE_RATE
from app.realtime.turns.turn import SpeechTurn

log = logging.getLogger("r1voice.turns")
COMPLETE = 0.5  # the model's probability above which an utterance is finished
RESCORE_EVERY = PIPELINE_RATE * 400 // 1000  # more silence since the last score


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
        self._pause: tuple[SpeechTurn, int, int] | None = None  # turn, pause start, silence scored

    async def paused(self, turn: SpeechTurn, sample: int, heard_at: int) -> None:
        """The VAD heard a pause begin at `sample` (its early pause event, at `heard_at`)."""
        self._pause = (turn, sample, heard_at - sample)
        self.scores = []
        await self._judge(turn, sample, heard_at)

    def resumed(self) -> None:
        self._pause = None

    async def grew(self, silence: int) -> None:
        """The pause is `silence` samples long now: score again at every RESCORE_EVERY of
        it, each time on the audio up to exactly that point (not to wherever the client's
        last append happened to end), so the verdicts do not depend on append sizes."""
        while self._pause is not None and silence - self._pause[2] >= RESCORE_EVERY:
            turn, sample, scored = self._pause
            self._pause = (turn, sample, scored + RESCORE_EVERY)
            await self._judge(turn, sample, sample + scored + RESCORE_EVERY)

    async def _judge(self, turn: SpeechTurn, sample: int, end: int) -> None:
        try:
            probability = await self.scorer.score(self.audio_of(turn, end))
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
        if probability >= COMPLETE and self._pause is not None and self._pause[0] is turn:
            self._pause = None
            await self.end_turn(turn, sample)

    def close(self) -> None:
        self._pause = None
