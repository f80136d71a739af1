"""How a Whisper pass decodes (app/speech/whisper_decoding.py), without a model: the
fitted encoder window and the loops that make a pass decode again."""

from __future__ import annotations

import pytest

from app.speech.whisper_decoding import (
    CONTEXT_UNITS,
    context_prompt,
    decode_options,
    echoes,
    repeats,
    window_frames,
)


def test_short_clips_are_encoded_over_a_fitted_window() -> None:
    second = 16_000
    assert window_frames(3 * second, 12.0) == 1200  # the 12 s floor
    assert window_frames(25 * second, 12.0) == 2700  # its length + 2 s
    assert window_frames(int(28.5 * second), 12.0) == 3000  # never past Whisper's 30 s
    assert window_frames(60 * second, 12.0) == 3000  # longer audio: full windows
    assert window_frames(3 * second, 30.0) == 3000  # 30: always the full window


def test_repeats_finds_a_loop_not_a_repeated_word() -> None:
    assert repeats("what colour is the sky what colour is the sky on a")
    assert not repeats("ask not what your country can do for you, ask what you can do")
    assert not repeats("very very very good")


@pytest.mark.parametrize(
    ("text", "loops"),
    [
        ("我们去吧我们去吧我们去吧", True),  # a run of four characters, three times
        ("我们去吧。我们去吧。", True),  # punctuation does not hide it
        ("今天天气很好，今天天气很好。", True),
        ("what colour is the sky 天空是什么颜色天空是什么颜色", True),  # mixed
        ("今天天气很好，我们去公园吧。", False),
        ("谢谢谢谢", False),  # a repeated word of two characters is speech
        ("谢谢你，谢谢你。", False),  # so is a repeated phrase of three
        ("哈哈哈哈哈哈", False),  # and laughter
        ("我们去吧", False),
        ("我想去 Paris 我想去 London", False),
    ],
)
def test_repeats_in_chinese_counts_characters(text: str, loops: bool) -> None:
    assert repeats(text) is loops


def test_echoes_finds_a_window_that_opens_with_its_prompt() -> None:
    prompt = "And so my fellow Americans, ask not what your country can do for you."
    assert echoes(prompt, "Ask not what your country can do for you, ask what you can do")
    assert echoes(prompt, "and so my fellow Americans")
    assert not echoes(prompt, "ask what you can do for your country.")  # its own words
    assert not echoes(prompt, "your country")  # too short to tell
    assert not echoes(None, "and so my fellow Americans")
    assert echoes("欢迎大家来体验达摩院推出的语音识别模型", "达摩院推出的语音识别模型富士康")
    assert not echoes("欢迎大家来体验达摩院推出的语音识别模型", "富士康在印度工厂出现")


def test_the_context_is_the_last_words_of_the_turns_before() -> None:
    assert context_prompt(None, "and so my fellow Americans,") == "and so my fellow Americans,"
    assert context_prompt("and so", " ", "my fellow Americans") == "and so my fellow Americans"
    assert context_prompt("希望你", "以后") == "希望你以后"
    assert context_prompt(None, "") is None
    long = " ".join(f"w{i}" for i in range(100))
    assert context_prompt(long) == " ".join(f"w{i}" for i in range(100 - CONTEXT_UNITS, 100))


def test_a_short_final_pass_asks_for_timestamps_only_when_told() -> None:
    second = 16_000
    assert decode_options(5 * second, "zh", 5, False)["without_timestamps"] is True
    assert (
        decode_options(5 * second, "zh", 5, False, timestamps=True)["without_timestamps"] is False
    )
    assert decode_options(45 * second, "en", 1, False)["condition_on_previous_text"] is False
    assert decode_options(45 * second, "en", 1, False, condition=True)["condition_on_previous_text"]
    assert decode_options(45 * second, "zh", 1, False)["condition_on_previous_text"] is True
