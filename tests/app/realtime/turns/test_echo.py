"""The echo check: our own answer coming back is recognised, other speech is not, and the
playback timeline follows what the client plays (a fake clock)."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio import PIPELINE_RATE, float_to_pcm16
from app.catalog import registry as model_registry
from app.protocol.session_schema import AudioFormat
from app.realtime.turns.echo import ECHO_CORRELATION, WINDOW, EchoReference, echo_correlation
from app.speech.piper_tts import PiperTTS
from tests.conftest import load_clip

PCM_16K = AudioFormat(type="audio/pcm", rate=PIPELINE_RATE)
SECOND = PIPELINE_RATE


@pytest.fixture(scope="module")
def answer() -> np.ndarray:
    """A spoken answer in the server's voice (Piper), 16 kHz."""
    piper = PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="piper")
    text = "The moon is the only natural satellite of the Earth, and it shapes our tides."
    return np.asarray(piper.synthesize(text, PIPELINE_RATE), np.float32)[: 4 * SECOND]


def _room(played: np.ndarray, delay_s: float, attenuation_db: float) -> np.ndarray:
    # a quiet room's noise floor, -70 dBFS
    noise = np.random.default_rng(0).standard_normal(played.size).astype(np.float32) * 3e-4
    late = np.concatenate([np.zeros(int(delay_s * SECOND), np.float32), played])[: played.size]
    return late * 10 ** (-attenuation_db / 20) + noise


@pytest.mark.parametrize(("delay_s", "attenuation_db"), [(0.1, 30), (0.4, 20), (0.8, 10)])
def test_the_answer_heard_back_is_echo(
    answer: np.ndarray, delay_s: float, attenuation_db: float
) -> None:
    mic = _room(answer, delay_s, attenuation_db)
    for end in range(2 * SECOND, answer.size, SECOND // 4):  # windows across the answer
        played = answer[end - WINDOW - SECOND : end]  # what played until now
        assert echo_correlation(mic[end - WINDOW : end], played) >= ECHO_CORRELATION, end


def test_a_human_voice_is_not_echo_alone_or_over_it(answer: np.ndarray) -> None:
    jfk = load_clip("jfk.flac", PIPELINE_RATE)[: answer.size]
    over_echo = jfk + _room(answer, 0.1, 20)[: jfk.size]
    for mic in (jfk, over_echo):
        for end in range(2 * SECOND, 3 * SECOND, SECOND // 4):  # "...my fellow Americans"
            played = answer[end - WINDOW - SECOND : end]
            assert echo_correlation(mic[end - WINDOW : end], played) < ECHO_CORRELATION, end


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_timeline_queues_pieces_and_forgets_them_on_a_barge_in(answer: np.ndarray) -> None:
    clock = FakeClock()
    echo = EchoReference(max_delay_s=1.0, clock=clock)
    assert not echo.audible()
    echo.played(float_to_pcm16(answer[: 2 * SECOND]), PCM_16K)  # plays 100-102 s
    clock.now = 100.5
    echo.played(float_to_pcm16(answer[2 * SECOND :]), PCM_16K)  # queued: 102-104 s
    clock.now = 104.9
    assert echo.audible()  # its last words may still be on their way to the microphone
    clock.now = 105.1
    assert not echo.audible()
    clock.now = 101.0
    echo.stopped()  # the client flushed its playback
    clock.now = 102.1
    assert not echo.audible()


def test_heard_compares_the_input_with_what_played_before_it(answer: np.ndarray) -> None:
    clock = FakeClock()
    echo = EchoReference(clock=clock)
    echo.played(float_to_pcm16(answer), PCM_16K)  # from 100 s on
    clock.now = 102.0
    mic = _room(answer, 0.25, 20)
    assert echo.heard(mic[2 * SECOND - WINDOW : 2 * SECOND])
    jfk = load_clip("jfk.flac", PIPELINE_RATE)
    assert not echo.heard(jfk[2 * SECOND : 2 * SECOND + WINDOW])
    assert echo.heard(np.zeros(WINDOW, np.float32))  # silence: nothing to barge in with


def test_what_played_long_ago_is_forgotten(answer: np.ndarray) -> None:
    clock = FakeClock()
    echo = EchoReference(max_delay_s=1.0, clock=clock)
    piece = float_to_pcm16(answer[: SECOND // 10])
    for _ in range(600):  # a minute of answer, 100 ms at a time
        echo.played(piece, PCM_16K)
        clock.now += 0.1
    assert len(echo._pieces) <= 30  # the last ~2.6 s: a window, the delay and a margin
