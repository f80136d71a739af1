"""The voice catalog: Piper default, espeak-ng in any language, OpenAI names as aliases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.models.espeak_tts import EspeakTTS
from app.models.voices import OPENAI_VOICES


def test_catalog_offers_espeak_languages(shared_components: Any) -> None:
    voices = shared_components.tts.voices()
    assert voices[0] == "piper-en_US-joe-medium"
    assert {"espeak-ng", "espeak-ng:de", "alloy"} <= set(voices)


def test_openai_names_are_the_default_voice(shared_components: Any) -> None:
    catalog = shared_components.tts
    assert {catalog.resolve(v) for v in OPENAI_VOICES} == {"piper-en_US-joe-medium"}


def test_espeak_speaks_german_and_honours_speed() -> None:
    tts = EspeakTTS("de")
    slow = tts.synthesize("Guten Tag, wie geht es Ihnen?", 24_000, speed=0.75)
    fast = tts.synthesize("Guten Tag, wie geht es Ihnen?", 24_000, speed=1.5)
    assert slow.dtype == np.float32 and np.abs(slow).max() > 0.05
    assert fast.size < slow.size * 0.8


def test_espeak_unknown_language_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="espeak-ng failed for voice 'xx-nowhere'"):
        EspeakTTS("xx-nowhere").synthesize("hello", 24_000)


def test_coqui_without_the_extra_says_how_to_install(tmp_path: Any) -> None:
    from app.models.coqui_tts import CoquiTTS

    with pytest.raises(RuntimeError, match=r"pip install \.\[coqui\]"):
        CoquiTTS(tmp_path)


def test_voice_list_is_read_once_at_start(
    shared_components: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: every session.update ran `espeak-ng --voices` twice on the event loop."""
    import subprocess

    def no_subprocess(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("voices() ran a program")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert "espeak-ng:de" in shared_components.tts.voices()
