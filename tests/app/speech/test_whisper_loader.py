"""faster-whisper's model as the server loads it (app/speech/whisper_loader.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.audio import resample
from app.catalog import registry as model_registry
from app.speech.asr import WhisperASR
from tests.conftest import load_clip


def test_the_decoder_on_one_thread_decodes_the_same_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoder runs on a one-thread copy of the model (beam search was a third faster
    there): every token is the one the pass's own threads decode, greedy (English) and
    beam 5 (Mandarin), and the copy is what decodes."""
    location = model_registry.locate("whisper-base", "asr")
    apart = WhisperASR(location, name="whisper-base", threads=2)
    together = WhisperASR(location, name="whisper-base", threads=2, decode_apart=False)
    split = apart.model.model
    decoded: list[int] = []

    class Counting:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            decoded.append(len(args[1]))
            return self.inner.generate(*args, **kwargs)

        def detect_language(self, *args: Any, **kwargs: Any) -> Any:
            decoded.append(0)
            return self.inner.detect_language(*args, **kwargs)

    monkeypatch.setattr(split, "_decoder", Counting(split._decoder))
    english = resample(load_clip("jfk.flac"), 24_000, 16_000)
    mandarin = load_clip("zh/funasr_asr_example.wav", 16_000)
    for audio, language in ((english, "en"), (mandarin, "zh"), (mandarin, None)):
        heard = apart.transcribe(audio, language=language)
        assert heard == together.transcribe(audio, language=language), language
    assert heard.language == "zh" and "语音识别" in heard.text
    assert decoded.count(1) == 3 and 0 in decoded  # three passes; one language detection
    for asr in (apart, together):
        asr.executor.shutdown()
