"""Piper synthesis."""

from __future__ import annotations

import numpy as np

from app.catalog import registry as model_registry
from app.executor import CancelToken
from app.speech.piper_tts import PiperTTS


def test_piper_speaks_at_the_requested_rate() -> None:
    tts = PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="joe")
    audio = tts.synthesize("Hello there, how are you?", 24_000)
    assert audio.dtype == np.float32
    assert 0.8 < audio.size / 24_000 < 4.0
    assert np.abs(audio).max() > 0.1
    faster = tts.synthesize("Hello there, how are you?", 24_000, speed=2.0)
    assert faster.size < audio.size * 0.75


def test_a_cancelled_synthesis_stops_at_the_next_sentence() -> None:
    tts = PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="joe")
    token = CancelToken()
    token.cancel()
    assert tts.synthesize("One sentence. And another one.", 24_000, cancel=token).size == 0
