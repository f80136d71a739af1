"""Early answers: the final pass starts at the VAD's lull, and the answer on its words.

At the lull (see `VADConfig.lull_ms`) the final transcription starts; if it is ready
before the turn really ends, the answer starts too, held unseen (see responses/gate.py)
until the committed transcript confirms it (see committed.answer_committed). The same
words are the first whole pass over speech that paused an answer: they decide it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from app.realtime.turns.barge_in import BargeIn
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.turn import ASR_TAIL, ResponseStarter, SpeechTurn


@dataclass
class EarlyAnswers:
    audio: InputAudio
    responses: ResponseStarter
    barge_in: BargeIn  # told the early words of speech over an answer
    _closed: bool = field(default=False, init=False)

    def speculate(
        self, turn: SpeechTurn, sample: int, respond: Callable[[], bool]
    ) -> asyncio.Task[str]:
        """Silence began at `sample`: start its final pass (once) and, when its words come
        and `respond()` says answers start on their own, a held answer on them."""
        early = turn.transcriber.speculation(sample)
        if early is None:
            audio = self.audio.turn_audio(turn.start, sample, turn.carry, tail=ASR_TAIL)
            early = turn.transcriber.speculate(audio, sample)
            early.add_done_callback(lambda task: self._answer(turn, task, respond))
        return early

    def close(self) -> None:
        """No answer starts from now on (a pass finishing late is ignored)."""
        self._closed = True

    def _answer(
        self, turn: SpeechTurn, early: asyncio.Task[str], respond: Callable[[], bool]
    ) -> None:
        """Start a held answer on the early transcript while the silence window runs."""
        if self._closed or early.cancelled() or early.exception() is not None:
            return
        text = early.result().strip()
        self.barge_in.heard(turn.interruption, text, turn.transcriber.language)
        if not (turn.open and respond() and text):
            return
        if turn.transcriber.paused and not self.responses.responding:
            language = turn.transcriber.language  # what the early pass heard
            turn.early = self.responses.start(early_user_text=text, early_language=language)
