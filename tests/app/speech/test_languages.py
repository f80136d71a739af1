"""Language codes, what a Whisper model transcribes, and Chinese in simplified characters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.speech.languages import (
    ENGLISH_ONLY,
    WHISPER_LANGUAGES,
    language_error,
    model_languages,
    normalize,
    simplified,
)


@pytest.mark.parametrize(
    ("code", "expected"),
    [("zh", "zh"), ("zh-CN", "zh"), ("en_US", "en"), (" ZH ", "zh"), ("", None), (None, None)],
)
def test_normalize(code: str | None, expected: str | None) -> None:
    assert normalize(code) == expected


def test_an_english_only_model_is_known_by_its_name_or_its_vocabulary(tmp_path: Path) -> None:
    assert model_languages("whisper-tiny.en") == ENGLISH_ONLY
    (tmp_path / "vocabulary.json").write_text(json.dumps(["x"] * 51864))
    assert model_languages("my-english-model", tmp_path) == ENGLISH_ONLY
    (tmp_path / "vocabulary.json").write_text(json.dumps(["x"] * 51865))
    assert model_languages("whisper-small", tmp_path) == WHISPER_LANGUAGES
    assert "zh" in WHISPER_LANGUAGES and "yue" in WHISPER_LANGUAGES


def test_refusals_say_what_to_do() -> None:
    assert language_error("zh", "whisper-tiny.en", ENGLISH_ONLY, ["whisper-base"]) == (
        "'whisper-tiny.en' transcribes only en; for 'zh' choose 'whisper-base'"
    )
    assert "add a multilingual model" in language_error("zh", "whisper-tiny.en", ENGLISH_ONLY, [])
    message = language_error("xx", "whisper-base", WHISPER_LANGUAGES, [])
    assert message.startswith("language 'xx' is not a language Whisper knows")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我們說國語，這個軟體很好用。", "我们说国语，这个软体很好用。"),
        ("欢迎大家来体验", "欢迎大家来体验"),  # already simplified: unchanged
        ("Hello 世界", "Hello 世界"),
        ("", ""),
    ],
)
def test_simplified(text: str, expected: str) -> None:
    assert simplified(text) == expected
