"""Text units: what "a word" is in a transcript or an answer, per script.

Chinese and Japanese are written without spaces, so `str.split()` sees a whole Chinese
sentence as one word. A *unit* is one CJK character (Han, kana, bopomofo, a full-width
form) or, in every other script, a whitespace-separated word. Punctuation belongs to a
unit as it would to a word: a closing mark ("，" "。" "”" ",") to the unit before it, an
opening one ("「" "（" "“") to the unit after it. Text with no CJK character splits
exactly as `str.split()` does, so English behaviour is unchanged wherever units replace
words.

Hangul is deliberately not CJK here: Korean puts spaces between its words, so its words
split on spaces like Latin ones (one unit a syllable would drop those spaces on `join`).

`join` is the inverse up to normalised spacing: a space between two spaced-script
words, none between two CJK characters, none around full-width punctuation (it carries
its own space) nor between a CJK character and a number ("3个", "2024年"), and one
between a CJK character and a spaced-script word ("我想去 Paris 看看").
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Unicode blocks written without spaces between words (first, last code point).
_CJK_BLOCKS = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation (。、「」 々 〇)
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3100, 0x312F),  # bopomofo
    (0x31A0, 0x31FF),  # bopomofo extended, CJK strokes, katakana extensions
    (0x3400, 0x4DBF),  # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE10, 0xFE1F),  # vertical forms
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFFEF),  # half-width and full-width forms (，！？ and half-width katakana)
    (0x20000, 0x3FFFF),  # CJK unified ideographs extensions B-H, compatibility supplement
)


def is_cjk(char: str) -> bool:
    """Whether `char` (one character) belongs to a script written without spaces: a CJK
    character or a full-width / CJK punctuation mark."""
    code = ord(char)
    return any(first <= code <= last for first, last in _CJK_BLOCKS)


def is_cjk_letter(char: str) -> bool:
    """A CJK character that is one unit of its own (not a punctuation mark)."""
    return is_cjk(char) and char.isalnum()


def _opens(char: str) -> bool:
    """An opening bracket or quote: it belongs to the unit after it."""
    return unicodedata.category(char) in ("Ps", "Pi")


def _chunk_units(chunk: str) -> list[str]:
    """The units of a run of text with no whitespace."""
    out: list[str] = []
    pending = ""  # opening punctuation waiting for the unit it opens
    in_word = False  # the last unit is a spaced-script word still being written
    for char in chunk:
        if is_cjk_letter(char):
            out.append(pending + char)
            pending, in_word = "", False
        elif in_word:
            out[-1] += char  # "3.50", "don't", "Paris," stay one word, as with split()
            in_word = not is_cjk(char)  # a full-width mark ends it: "Paris，" "看"
        elif char.isalnum():
            out.append(pending + char)
            pending, in_word = "", True
        elif out and not _opens(char):
            out[-1] += char  # a closing mark after a CJK character: "好，"
        else:
            pending += char
    if pending:
        if out:
            out[-1] += pending
        else:
            out.append(pending)  # a chunk of punctuation alone ("—") is a unit, as a word
    return out


def units(text: str) -> list[str]:
    """`text` split into units: CJK characters one by one, other words at whitespace.

    >>> units("我想去 Paris，看看。")
    ['我', '想', '去', 'Paris，', '看', '看。']
    """
    return [unit for chunk in text.split() for unit in _chunk_units(chunk)]


def has_han(text: str) -> bool:
    """Whether `text` holds a Han (Chinese) character."""
    return any(is_cjk_letter(c) and unicodedata.name(c, "").startswith("CJK") for c in text)


def count_units(text: str) -> int:
    """How many units `text` holds (its word count, counting CJK characters one by one)."""
    return len(units(text))


def _gap(left: str, right: str) -> str:
    """What goes between two adjacent pieces of text: a space or nothing."""
    if not left or not right:
        return ""
    if (is_cjk(left[-1]) and not left[-1].isalnum()) or (
        is_cjk(right[0]) and not right[0].isalnum()
    ):
        return ""  # full-width punctuation carries its own space
    a = next((c for c in reversed(left) if c.isalnum()), left[-1])
    b = next((c for c in right if c.isalnum()), right[0])
    if not (is_cjk_letter(a) or is_cjk_letter(b)):
        return " "
    if is_cjk_letter(a) and is_cjk_letter(b):
        return ""
    other = b if is_cjk_letter(a) else a
    return "" if other.isdigit() else " "


def join(pieces: Iterable[str]) -> str:
    """Units (or longer pieces of text) joined with spaces only where the scripts want
    them. Depends on adjacent pieces only, so `join(a + b)` starts with `join(a)`:
    `join(a + b)[len(join(a)):]` is the text `b` adds (a streamed delta)."""
    text = ""
    for piece in pieces:
        if piece:
            text += _gap(text, piece) + piece
    return text
