"""Early answers, alone: the final pass at a silence's start, once, and the held answer
started on its words only while they may still be the turn's (exact calls out)."""

from __future__ import annotations

import asyncio

import numpy as np

from app.protocol import server_events as se
from app.protocol.session_schema import AudioFormat, TurnDetection
from app.realtime.turns.barge_in import BargeIn
from app.realtime.turns.early_answers import EarlyAnswers
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import ASR_TAIL, SpeechTurn
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeResponses
from tests.fakes import ScriptedASR

PADDING = 300 * 16  # the default prefix_padding_ms, in samples


class EarlyHarness(Harness):
    """Two seconds of input audio heard; a confirmed turn from 16_000 on."""

    def __init__(self, text: str, responding: bool = False) -> None:
        super().__init__()
        self.audio = InputAudio(None, AudioFormat(), TurnDetection())  # type: ignore[arg-type]
        self.audio.buffer.append(np.zeros(40_000, np.float32))
        self.asr = ScriptedASR([text])
        self.responses = FakeResponses(responding=responding)
        barge_in = BargeIn(self.responses, self.emit, Tasks(), 1.5)
        self.early = EarlyAnswers(self.audio, self.responses, barge_in)
        transcriber = TurnTranscriber(self.asr, lambda _delta: None)
        self.turn = SpeechTurn("item_1", 16_000, transcriber, confirmed=True)
        self.respond = True

    async def silence_at(self, sample: int) -> None:
        await self.early.speculate(self.turn, sample, lambda: self.respond)


def test_the_pass_hears_the_turn_and_the_start_of_its_silence_and_starts_a_held_answer() -> None:
    h = EarlyHarness("What time is it?")
    asyncio.run(h.run(h.silence_at(30_000), expect=[]))  # nothing told the client yet
    assert h.asr.calls == [(30_000 + ASR_TAIL - (16_000 - PADDING), None)]
    (answer,) = h.responses.started
    assert answer.early_user_text == "What time is it?" and h.responses.languages == ["en"]
    assert h.turn.early is answer and h.turn.transcriber.paused


def test_the_same_silence_reuses_its_pass() -> None:
    async def main(h: EarlyHarness) -> None:
        first = h.early.speculate(h.turn, 30_000, lambda: True)
        assert h.early.speculate(h.turn, 30_000, lambda: True) is first
        await h.settle()

    h = EarlyHarness("What time is it?")
    asyncio.run(main(h))
    assert len(h.asr.calls) == 1 and len(h.responses.started) == 1


def test_no_held_answer_when_it_would_not_be_the_turns() -> None:
    """Answers off, no words, a running answer, a turn no longer spoken, or speech that
    went on (the partial passes resumed) start nothing."""

    async def main(h: EarlyHarness, case: str) -> None:
        h.respond = case != "create_response off"
        if case == "turn ended":
            h.turn.open = False
        task = h.early.speculate(h.turn, 30_000, lambda: h.respond)
        if case == "speech went on":
            await asyncio.sleep(0)
            h.turn.transcriber.paused = False
        await asyncio.wait([task])
        await h.settle()

    for case, text, responding in [
        ("create_response off", "What time is it?", False),
        ("no words", "  ", False),
        ("an answer runs", "What time is it?", True),
        ("turn ended", "What time is it?", False),
        ("speech went on", "What time is it?", False),
    ]:
        h = EarlyHarness(text, responding)
        asyncio.run(main(h, case))
        assert h.responses.started == [] and h.turn.early is None, case


def test_after_close_a_late_pass_starts_nothing() -> None:
    async def main(h: EarlyHarness) -> None:
        task = h.early.speculate(h.turn, 30_000, lambda: True)
        h.early.close()
        await asyncio.wait([task])
        await h.settle()

    h = EarlyHarness("What time is it?")
    asyncio.run(main(h))
    assert h.responses.started == []


def test_the_early_words_decide_speech_over_a_paused_answer() -> None:
    async def main(h: EarlyHarness) -> None:
        h.early.barge_in.pause(h.turn, lambda: "en")
        await h.early.speculate(h.turn, 30_000, lambda: True)
        await h.settle()

    h = EarlyHarness("Uh-huh.", responding=True)
    asyncio.run(main(h))
    assert [e["verdict"] for e in h.of_type(se.Interruption)] == ["wait", "backchannel"]
    assert h.responses.playing.resumes == 1
    assert h.responses.started == []  # an answer runs: no early one beside it
