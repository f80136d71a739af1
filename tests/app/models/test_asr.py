"""faster-whisper on the bundled tiny.en model, with real human speech."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.audio import resample
from app.executor import CancelToken
from app.models import registry as model_registry
from app.models.asr import WhisperASR
from tests.conftest import load_clip


@pytest.fixture(scope="module")
def asr() -> WhisperASR:
    return WhisperASR(model_registry.locate("whisper-tiny.en", "asr"), name="whisper-tiny.en")


def test_jfk_transcript(asr: WhisperASR) -> None:
    text = asr.transcribe(resample(load_clip("jfk.flac"), 24_000, 16_000)).text.lower()
    assert "ask not what your country can do for you" in text.replace(",", "")


def test_silence_transcribes_to_nothing(asr: WhisperASR) -> None:
    assert asr.transcribe(np.zeros(16_000, np.float32)).text == ""


def test_corrupt_model_names_the_model_and_the_fix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = model_registry.locate("whisper-tiny.en", "asr")
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (tmp_path / "model.bin").write_bytes((source / "model.bin").read_bytes()[:1000])
    with pytest.raises(RuntimeError, match=r"whisper-tiny\.en.*r1voice models prepare"):
        WhisperASR(tmp_path, name="whisper-tiny.en")


def test_a_cancelled_pass_stops_and_decodes_nothing(asr: WhisperASR) -> None:
    token = CancelToken()
    token.cancel()  # the caller went away before the pass began (or between segments)
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)
    assert asr.transcribe(speech, cancel=token).text == ""


def test_runs_on_its_own_executor(asr: WhisperASR) -> None:
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)[: 3 * 16_000]
    text = asyncio.run(asr.run(speech)).text.lower()
    assert "fellow" in text or "americans" in text
    assert asr.executor.name == "asr" and not asr.busy
