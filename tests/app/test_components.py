"""What the server loads and warms before its first user (app/components.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.components import _may_answer_in_chinese
from app.settings import Settings
from app.speech.languages import ENGLISH_ONLY

MULTILINGUAL = ("en", "zh", "de")


@pytest.mark.parametrize(
    ("voice", "asr_language", "languages", "warmed"),
    [
        ("auto", "", MULTILINGUAL, True),  # Whisper detects Mandarin, auto speaks it
        ("auto", "zh", MULTILINGUAL, True),
        ("espeak-ng:cmn", "zh", MULTILINGUAL, True),
        ("auto", "en", MULTILINGUAL, False),  # the sessions hear English only
        ("auto", "", ENGLISH_ONLY, False),  # tiny.en never hears Mandarin
        ("", "zh", MULTILINGUAL, False),  # an English voice reads it: nothing to load
        ("piper-en_US-joe-medium", "", MULTILINGUAL, False),
    ],
)
def test_the_chinese_voice_is_warmed_where_a_first_answer_may_need_it(
    voice: str, asr_language: str, languages: tuple[str, ...], warmed: bool
) -> None:
    """Bug: the first Mandarin answer of a server paid 0.2 s for pypinyin's dictionaries
    (its first synthesis); warm-up now loads them where a Chinese answer may come."""
    settings = Settings(voice=voice, asr_language=asr_language)
    asr = SimpleNamespace(languages=languages)
    assert _may_answer_in_chinese(settings, asr) is warmed  # type: ignore[arg-type]
