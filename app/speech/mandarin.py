"""Mandarin text for espeak-ng: numbers read out and characters as tone-numbered pinyin.

Debian's espeak-ng `cmn` voice knows few Chinese characters: the rest it reads as English
letters and tone digits (Whisper hears "1-5-0-1-1" for 一个星期有几天). Its
`cmn-latn-pinyin` voice reads pinyin well, so Chinese text is turned into pinyin with
tone numbers first (pypinyin, which knows the characters' readings in context).
"""

from __future__ import annotations

import re

_DIGITS = "零一二三四五六七八九"
PINYIN_VOICE = "cmn-latn-pinyin"
_PUNCTUATION = str.maketrans("，。！？；：、（）", ",.!?;:,()")


def zh_number(n: int) -> str:
    """An integer below 100,000 as it is read in Mandarin (50 -> 五十, 105 -> 一百零五)."""
    if n < 10:
        return _DIGITS[n]
    out, zero = "", False
    for value, name in ((10000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit == 0:
            zero = bool(out)
            continue
        if zero:
            out += "零"
            zero = False
        out += ("" if value == 10 and digit == 1 and not out else _DIGITS[digit]) + name
    return out


def read_numbers(text: str) -> str:
    """Digits in Chinese text as they are read ("超50%" -> "超百分之五十"); a number of
    100,000 or more is read digit by digit."""

    def read(match: re.Match[str]) -> str:
        digits = match.group(1)
        n = int(digits)
        spoken = zh_number(n) if n < 100_000 else "".join(_DIGITS[int(d)] for d in digits)
        return f"百分之{spoken}" if match.group(2) else spoken

    return re.sub(r"(\d+)\s*(%|％)?", read, text)


def to_pinyin(text: str) -> str:
    """Chinese text as pinyin with tone numbers (neutral tone 5), other text kept."""
    from pypinyin import Style, lazy_pinyin

    syllables = lazy_pinyin(read_numbers(text), style=Style.TONE3, neutral_tone_with_five=True)
    return " ".join(syllables).translate(_PUNCTUATION)
