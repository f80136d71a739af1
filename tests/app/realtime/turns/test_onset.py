"""When speech counts, alone: the VAD's state, the answer and the echo check in, the
decision out."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np

from app.executor import ModelExecutor
from app.protocol.session_schema import AudioFormat, TurnDetection
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.onset import Onset
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import SpeechTurn
from tests.app.realtime.turns.fakes import FakeResponses
from tests.fakes import ScriptedASR

HOLD = 4800  # 300 ms


class ScriptedEcho:
    def __init__(self, audible: bool, echo: bool) -> None:
        self.is_audible, self.echo = audible, echo
        self.checked: list[int] = []  # each window's length
        self.stops = 0

    def audible(self) -> bool:
        return self.is_audible

    def heard(self, window: np.ndarray) -> bool:
        self.checked.append(window.size)
        return self.echo

    def stopped(self) -> None:
        self.stops += 1


def onset(
    heard: int, *, responding: bool = False, echo: ScriptedEcho | None = None
) -> tuple[Onset, SpeechTurn]:
    """Speech from 16_000 on, `heard` samples of it so far, the VAD in speech."""
    audio = InputAudio(None, AudioFormat(), TurnDetection())  # type: ignore[arg-type]
    audio.vad_model = SimpleNamespace(executor=ModelExecutor("vad-test"))  # type: ignore[assignment]
    audio.buffer.append(np.zeros(16_000 + heard, np.float32))
    audio.vad.speaking = True
    turn = SpeechTurn("item_1", 16_000, TurnTranscriber(ScriptedASR([]), lambda _delta: None))
    part = Onset(audio, FakeResponses(responding=responding), HOLD, echo)  # type: ignore[arg-type]
    return part, turn


def test_speech_must_hold_over_an_answer_or_its_audible_echo_only() -> None:
    assert not onset(0)[0].must_hold()
    assert onset(0, responding=True)[0].must_hold()
    assert onset(0, echo=ScriptedEcho(audible=True, echo=False))[0].must_hold()
    assert not onset(0, echo=ScriptedEcho(audible=False, echo=False))[0].must_hold()


def test_speech_passes_the_hold_at_its_length_unless_it_is_our_echo() -> None:
    part, turn = onset(HOLD - 1, responding=True)
    assert not asyncio.run(part.passed_hold(turn))
    part, turn = onset(HOLD, responding=True)
    assert asyncio.run(part.passed_hold(turn))
    turn.confirmed = True
    assert not asyncio.run(part.passed_hold(turn))  # once is enough
    echo = ScriptedEcho(audible=True, echo=True)
    part, turn = onset(HOLD, echo=echo)
    assert not asyncio.run(part.passed_hold(turn)) and echo.checked == [9600]  # its last 0.6 s


def test_a_gap_as_long_as_the_hold_is_not_heard() -> None:
    part, turn = onset(HOLD, responding=True)
    part.audio.vad._silence_samples = HOLD - 1
    assert part.heard_over_answer(turn)
    part.audio.vad._silence_samples = HOLD
    assert not part.heard_over_answer(turn)
    turn.echo = True
    part.audio.vad._silence_samples = 0
    assert not part.heard_over_answer(turn)


def test_short_speech_over_an_answer_or_our_echo_is_noise() -> None:
    part, turn = onset(HOLD, responding=True)
    assert asyncio.run(part.was_noise(turn, 16_000 + HOLD - 1))  # a cough
    assert not asyncio.run(part.was_noise(turn, 16_000 + HOLD))
    part, turn = onset(HOLD)
    assert not asyncio.run(part.was_noise(turn, 16_000 + 100))  # a quick "yes", no answer
    echo = ScriptedEcho(audible=True, echo=True)
    part, turn = onset(HOLD, echo=echo)
    assert asyncio.run(part.was_noise(turn, 16_000 + HOLD))


def test_the_echo_is_checked_each_100_ms_and_told_when_playback_stops() -> None:
    echo = ScriptedEcho(audible=True, echo=True)
    part, turn = onset(HOLD, echo=echo)
    assert asyncio.run(part.heard_echo(turn)) and asyncio.run(part.heard_echo(turn))
    assert len(echo.checked) == 1  # the second ask, at the same position: the last answer
    part.announced()
    assert echo.stops == 1
