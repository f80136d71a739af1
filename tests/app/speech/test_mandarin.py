"""Mandarin for espeak-ng: numbers read out, characters as tone-numbered pinyin, and the
`cmn` voice speaking Chinese that Whisper hears as Chinese (not as digits)."""

from __future__ import annotations

import re
import shutil

import pytest

from app.speech.mandarin import read_numbers, to_pinyin, zh_number


@pytest.mark.parametrize(
    ("n", "said"),
    [
        (0, "零"), (7, "七"), (10, "十"), (11, "十一"), (20, "二十"), (50, "五十"),
        (100, "一百"), (105, "一百零五"), (110, "一百一十"), (1005, "一千零五"),
        (2024, "二千零二十四"), (10000, "一万"), (12345, "一万二千三百四十五"),
    ],
)  # fmt: skip
def test_zh_number(n: int, said: str) -> None:
    assert zh_number(n) == said


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("产量已下降超50%", "产量已下降超百分之五十"),
        ("有3个苹果", "有三个苹果"),
        ("电话123456", "电话一二三四五六"),
        ("没有数字", "没有数字"),
    ],
)
def test_read_numbers(text: str, read: str) -> None:
    assert read_numbers(text) == read


def test_to_pinyin() -> None:
    assert to_pinyin("中国的首都是北京。") == "zhong1 guo2 de5 shou3 du1 shi4 bei3 jing1 ."
    assert to_pinyin("我有2本书") == "wo3 you3 er4 ben3 shu1"


@pytest.fixture(scope="module")
def whisper_base():  # type: ignore[no-untyped-def]
    from app.catalog import registry
    from app.speech.asr import WhisperASR

    return WhisperASR(registry.locate("whisper-base", "asr"), name="whisper-base")


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
@pytest.mark.parametrize("text", ["一个星期有几天？", "天空是什么颜色的？"])
def test_the_cmn_voice_speaks_chinese_not_digits(whisper_base, text: str) -> None:  # type: ignore[no-untyped-def]
    """Bug: Debian's espeak-ng `cmn` read most characters as English letters and tone
    digits; Whisper heard "1-5-0-1-1-1" for 一个星期有几天."""
    from app.speech.espeak_tts import EspeakTTS

    audio = EspeakTTS("cmn").synthesize(text, 16_000)
    heard = whisper_base.transcribe(audio, language="zh").text
    assert re.search(r"[\u4e00-\u9fff]", heard) and not re.search(r"[0-9A-Za-z]", heard), heard
