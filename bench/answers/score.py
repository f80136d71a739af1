"""How `bench answers` judges an answer: normalisation, then lenient matching against the
accepted alternatives the question set lists (bench/answers/questions.py).

Normalisation (the same for the answer and each alternative): NFKC (full-width letters,
digits and punctuation become their ASCII forms), case folded, thousands separators
dropped ("1,000" -> "1000"), every other punctuation mark or symbol a space (a "."
between digits is kept: "2.5", less its trailing zeros: "100.0" -> "100"), English number words as digits ("twenty-four" -> "24",
"one hundred and five" -> "105") and Chinese numerals as digits ("二十四" -> "24",
"一千" -> "1000", "二〇二四" -> "2024").

Matching: an alternative counts when it occurs in the answer on word boundaries, so "4"
does not match "14" nor "4.5", and "cat" does not match "category"; keywords (how-to and
definition questions) need only a word start ("boil" matches "boiling"). Chinese has no
spaces, so a CJK character is always a boundary: "7" matches "7天".

Known limitations, by design: negation is not understood ("not Paris" contains "Paris"
and counts), nor is an answer that lists the right answer among wrong ones; Chinese
numerals inside words become digits too ("一样" -> "1样", "十分" -> "10分"), which can only
matter for an alternative that is a bare small number.
"""

from __future__ import annotations

import re
import unicodedata

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9,
}  # fmt: skip
_TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_ZH_RUN = re.compile("[" + "".join([*_ZH_DIGITS, *_ZH_UNITS, *_ZH_BIG]) + "]+")


def _is_cjk(c: str) -> bool:
    return unicodedata.east_asian_width(c) in ("W", "F")


def _is_word(c: str) -> bool:
    """Part of a word or a number (a "." survives normalisation only inside a number)."""
    return c == "." or (c.isalnum() and not _is_cjk(c))


def _zh_number(run: str) -> str:
    if not any(c in _ZH_UNITS or c in _ZH_BIG for c in run):  # read digit by digit
        return "".join(str(_ZH_DIGITS[c]) for c in run)
    total = section = number = 0
    for c in run:
        if c in _ZH_DIGITS:
            number = _ZH_DIGITS[c]
        elif c in _ZH_UNITS:
            section += (number or 1) * _ZH_UNITS[c]
            number = 0
        elif c == "万":
            section = (section + number) * 10_000
            number = 0
        else:  # 亿
            total = (total + section + number) * 100_000_000
            section = number = 0
    return str(total + section + number)


def _kind(token: str) -> str | None:
    if token in _UNITS:
        return "unit"
    if token in _TEENS:
        return "teen"
    if token in _TENS:
        return "tens"
    if token == "hundred":
        return "hundred"
    return "scale" if token in _SCALES else None


# which kind of number word may follow which (None: the start of a number)
_FOLLOWS = {
    "unit": {None, "tens", "hundred", "scale"},
    "teen": {None, "hundred", "scale"},
    "tens": {None, "hundred", "scale"},
    "hundred": {None, "unit", "teen"},
    "scale": {None, "unit", "teen", "tens", "hundred"},
}


def _english_numbers(tokens: list[str]) -> list[str]:
    """Runs of English number words -> one token of digits each."""
    out: list[str] = []
    total = current = 0
    last: str | None = None

    def flush() -> None:
        nonlocal total, current, last
        if last is not None:
            out.append(str(total + current))
        total = current = 0
        last = None

    for i, token in enumerate(tokens):
        kind = _kind(token)
        nxt = _kind(tokens[i + 1]) if i + 1 < len(tokens) else None
        if token == "and" and last in ("hundred", "scale") and nxt in ("unit", "teen", "tens"):
            continue  # "one hundred and five"
        if kind is None or (kind == "unit" and token == "zero" and last is not None):
            flush()
            if kind is None:
                out.append(token)
                continue
        if last not in _FOLLOWS[kind] or (kind == "hundred" and current >= 100):
            flush()
        if kind == "hundred":
            current = (current or 1) * 100
        elif kind == "scale":
            total += (current or 1) * _SCALES[token]
            current = 0
        else:
            current += _UNITS.get(token, _TEENS.get(token, _TENS.get(token, 0)))
        last = kind
    flush()
    return out


def normalize(text: str) -> str:
    """The comparable form of an answer or an alternative (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _ZH_RUN.sub(lambda m: f" {_zh_number(m.group())} ", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 1,000 -> 1000
    chars = []
    for i, c in enumerate(text):
        if c == "." and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit():
            chars.append(c)
        elif unicodedata.category(c)[0] in "PSZC":  # punctuation, symbols, spaces, controls
            chars.append(" ")
        else:
            chars.append(c)
    text = re.sub(r"(?<=\d)\.0+(?!\d)", "", "".join(chars))  # 100.0 -> 100
    text = re.sub(r"(?<=\.)(\d*?[1-9])0+(?!\d)", r"\1", text)  # 2.50 -> 2.5
    tokens = _english_numbers(text.split())
    # a CJK character next to a digit needs no space: "7 天" and "7天" read the same
    return re.sub(r"(?<=\S) (?=\S)", _space, " ".join(tokens))


def _space(match: re.Match[str]) -> str:
    s = match.string
    left, right = s[match.start() - 1], s[match.end()]
    return "" if _is_cjk(left) or _is_cjk(right) else " "


def _occurs(needle: str, haystack: str, word_start_only: bool) -> bool:
    start = 0
    while (i := haystack.find(needle, start)) >= 0:
        end = i + len(needle)
        left_ok = i == 0 or not (_is_word(needle[0]) and _is_word(haystack[i - 1]))
        right_ok = (
            word_start_only
            or end == len(haystack)
            or not (_is_word(needle[-1]) and _is_word(haystack[end]))
        )
        if left_ok and right_ok:
            return True
        start = i + 1
    return False


def match(answer: str, accepted: tuple[str, ...] | list[str], keywords: bool = False) -> str | None:
    """The first accepted alternative (as written) found in the answer, else None.
    `keywords`: alternatives need only start a word ("boil" matches "boiling")."""
    said = normalize(answer)
    for alternative in accepted:
        wanted = normalize(alternative)
        if wanted and _occurs(wanted, said, keywords):
            return alternative
    return None


def answer_length(text: str, lang: str) -> int:
    """Words for English; characters (letters, digits, CJK; no spaces or punctuation)
    for Chinese."""
    if lang == "zh":
        return sum(1 for c in text if c.isalnum())
    return len(text.split())


def in_language(text: str, lang: str) -> bool:
    """A Chinese answer holds a CJK character; an English one none."""
    cjk = any(_is_cjk(c) and c.isalpha() for c in text)
    return cjk if lang == "zh" else not cjk
