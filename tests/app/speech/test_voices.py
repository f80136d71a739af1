"""The voice catalog: Piper voices from a directory (broken ones left out with why), each
voice's language, and `auto` choosing a voice of the answer's language."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.catalog import registry
from app.speech.piper_tts import PiperTTS
from app.speech.voices import VoiceCatalog, text_language

DEFAULT = "piper-en_US-joe-medium"


@pytest.mark.parametrize(
    ("text", "heard", "expected"),
    [
        ("The capital of France is Paris.", None, "en"),
        ("北京是中国的首都。", None, "zh"),
        ("北京是中国的首都。", "en", "zh"),  # the answer's script wins
        ("東京は日本の首都です。", None, "ja"),  # kana
        ("東京", "ja", "ja"),  # Han alone: the heard language decides between zh and ja
        ("서울은 한국의 수도입니다.", None, "ko"),
        ("Paris est la capitale de la France.", "fr", "fr"),
        ("OK, it is sunny.", "zh", "en"),  # Latin letters after Chinese: English
        ("Bonjour !", "fr", "fr"),  # Latin letters, a language written in them
    ],
)
def test_text_language(text: str, heard: str | None, expected: str) -> None:
    assert text_language(text, heard) == expected


@pytest.fixture(scope="module")
def default_voice() -> PiperTTS:
    return PiperTTS(registry.locate(DEFAULT, "tts"), name=DEFAULT)


def _voice_dir(tmp_path: Path) -> Path:
    """A Piper voice labelled Mandarin (the bundled model under another name), one
    without its JSON, one empty, one whose JSON has no language."""
    source = registry.locate(DEFAULT, "tts")
    config = json.loads(Path(f"{source}.json").read_text())
    config["language"]["code"] = "zh_CN"
    (tmp_path / "zh_CN-test-medium.onnx").symlink_to(source)
    (tmp_path / "zh_CN-test-medium.onnx.json").write_text(json.dumps(config))
    (tmp_path / "de_DE-nojson-low.onnx").symlink_to(source)
    (tmp_path / "fr_FR-empty-low.onnx").write_bytes(b"")
    shutil.copy(f"{source}.json", tmp_path / "fr_FR-empty-low.onnx.json")
    (tmp_path / "es_ES-nolang-low.onnx").symlink_to(source)
    (tmp_path / "es_ES-nolang-low.onnx.json").write_text("{}")
    return tmp_path


def test_piper_voices_from_a_directory(default_voice: PiperTTS, tmp_path: Path) -> None:
    catalog = VoiceCatalog(default_voice, _voice_dir(tmp_path))
    assert "piper-zh_CN-test-medium" in catalog.voices()
    assert catalog.language("piper-zh_CN-test-medium") == "zh"
    assert catalog.language(DEFAULT) == "en"
    assert set(catalog.unavailable) == {
        "piper-de_DE-nojson-low",
        "piper-fr_FR-empty-low",
        "piper-es_ES-nolang-low",
    }
    assert "de_DE-nojson-low.onnx.json is missing" in catalog.unavailable["piper-de_DE-nojson-low"]
    assert "is empty" in catalog.unavailable["piper-fr_FR-empty-low"]
    assert "no readable language.code" in catalog.unavailable["piper-es_ES-nolang-low"]
    assert not any(v in catalog.voices() for v in catalog.unavailable)
    # `auto` takes the Piper voice of the language, the default for its own
    assert catalog.choose("auto", "zh") == "piper-zh_CN-test-medium"
    assert catalog.choose("auto", "en") == DEFAULT
    backend = catalog.backend("piper-zh_CN-test-medium")  # loads like any voice
    assert backend.name == "piper-zh_CN-test-medium"
    catalog.executor.shutdown()


def test_auto_falls_back_to_espeak_then_to_the_default(default_voice: PiperTTS) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (make install)")
    catalog = VoiceCatalog(default_voice, Path("/nonexistent/voices"))
    assert "R1VOICE_PIPER_VOICES is not a directory" in catalog.unavailable.values()
    assert catalog.choose("auto", "zh") == "espeak-ng:cmn"
    assert catalog.language("espeak-ng:cmn") == "zh"
    assert catalog.choose("auto", "de") == "espeak-ng:de"
    assert catalog.choose("auto", "en") == DEFAULT
    assert catalog.choose("auto", "xx") == DEFAULT  # nobody speaks it
    assert catalog.choose("alloy", "zh") == DEFAULT  # a named voice stays what it is
    assert catalog.choose("espeak-ng:de", "zh") == "espeak-ng:de"
    catalog.executor.shutdown()


def test_a_clause_the_listener_waits_for_is_synthesized_inside_the_llms_hold(
    default_voice: PiperTTS,
) -> None:
    """An answer's first clause has the cores: it runs inside the hold `give_way_with` was
    given; a later one shares them, even with no audio left to play (slack 0)."""
    catalog = VoiceCatalog(default_voice)
    spans: list[tuple[str, bool]] = []
    holding = False

    @contextlib.contextmanager
    def hold() -> Iterator[None]:
        nonlocal holding
        holding = True
        try:
            yield
        finally:
            holding = False

    def synthesize(
        text: str, out_rate: int, speed: float = 1.0, voice: str | None = None, cancel: Any = None
    ) -> np.ndarray:
        spans.append((text, holding))
        return default_voice.synthesize(text, out_rate, speed, cancel)

    catalog.give_way_with(hold)
    catalog.synthesize = synthesize  # type: ignore[method-assign,assignment]

    async def main() -> list[int]:
        first = await catalog.speak("Hello there.", 24000, 1.0, DEFAULT, 0.0, first=True)
        later = await catalog.speak("And more.", 24000, 1.0, DEFAULT, 0.0)
        return [len(first), len(later)]

    assert all(n > 0 for n in asyncio.run(main()))
    assert spans == [("Hello there.", True), ("And more.", False)]
    catalog.executor.shutdown()
