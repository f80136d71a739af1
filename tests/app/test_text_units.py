"""Text units: CJK characters one by one, other scripts' words at spaces, and the join
that puts spaces back only where the scripts want them."""

from __future__ import annotations

import pytest

from app.text_units import count_units, has_han, is_cjk, is_cjk_letter, join, units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我想去 Paris 看看", ["我", "想", "去", "Paris", "看", "看"]),
        ("我想去Paris看看", ["我", "想", "去", "Paris", "看", "看"]),
        ("你好，世界。", ["你", "好，", "世", "界。"]),  # closing marks stay with a unit
        ("他说：「你好」", ["他", "说：", "「你", "好」"]),  # an opening one with the next
        ("他说“你好”", ["他", "说", "“你", "好”"]),
        ("你好,world!", ["你", "好,", "world!"]),
        ("Paris，看看", ["Paris，", "看", "看"]),  # a full-width mark ends a word
        ("我想要3个", ["我", "想", "要", "3", "个"]),
        ("花了3.50元", ["花", "了", "3.50", "元"]),
        ("東京に行きたいです", ["東", "京", "に", "行", "き", "た", "い", "で", "す"]),
        ("안녕하세요 반갑습니다", ["안녕하세요", "반갑습니다"]),  # Korean is spaced
        ("你好 。", ["你", "好", "。"]),
        ("", []),
        ("  ", []),
    ],
)
def test_units(text: str, expected: list[str]) -> None:
    assert units(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Ask not -- what your country can do, for you!",
        "It costs 3.50 dollars (roughly) — don't 'quote' me...",
        "e-mail: someone@example.com\tand\nnewlines",
    ],
)
def test_text_without_cjk_splits_as_str_split(text: str) -> None:
    assert units(text) == text.split()
    assert join(units(text)) == " ".join(text.split())


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["我", "想", "去", "Paris", "看", "看"], "我想去 Paris 看看"),
        (["你", "好，", "world"], "你好，world"),  # full-width punctuation has its space
        (["Hello.", "你", "好"], "Hello. 你好"),
        (["你", "好,", "世", "界"], "你好,世界"),
        (["我", "想", "要", "3", "个"], "我想要3个"),  # numbers sit next to characters
        (["2024", "年"], "2024年"),
        (["iPhone", "15", "很", "好"], "iPhone 15很好"),
        (["你好。", "今天天气很好。"], "你好。今天天气很好。"),  # whole clauses join too
        (["Sure, it is Paris.", "It is old."], "Sure, it is Paris. It is old."),
        (["a", "", "b"], "a b"),
        ([], ""),
    ],
)
def test_join(pieces: list[str], expected: str) -> None:
    assert join(pieces) == expected


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("我想去 Paris 看看", "我想去 Paris 看看"),
        ("我想去Paris看看", "我想去 Paris 看看"),
        ("我 想 去 看 看", "我想去看看"),
        ("你好， 世界。 Hello world.", "你好，世界。Hello world."),
        ("我今年 25 岁", "我今年25岁"),
    ],
)
def test_join_of_units_is_normalized_text(text: str, normalized: str) -> None:
    assert join(units(text)) == normalized


def test_join_is_prefix_stable() -> None:
    """A streamed delta is what the new units add to the joined text."""
    text = units("我想去 Paris 看看 and then 回家")
    for i in range(len(text)):
        assert join(text).startswith(join(text[:i]))


@pytest.mark.parametrize(
    ("text", "count"),
    [("我想去 Paris 看看", 6), ("你好，世界。", 4), ("What time is it?", 4), ("", 0)],
)
def test_count_units(text: str, count: int) -> None:
    assert count_units(text) == count


@pytest.mark.parametrize(
    ("char", "cjk", "letter"),
    [
        ("我", True, True),
        ("な", True, True),
        ("ー", True, True),
        ("，", True, False),
        ("。", True, False),
        ("？", True, False),
        ("a", False, False),
        ("3", False, False),
        ("?", False, False),
        ("한", False, False),
        ("𠀀", True, True),  # extension B
    ],
)
def test_is_cjk(char: str, cjk: bool, letter: bool) -> None:
    assert is_cjk(char) is cjk
    assert is_cjk_letter(char) is letter


@pytest.mark.parametrize(
    ("text", "han"),
    [("北京", True), ("東京は", True), ("豈", True), ("ひらがな", False), ("서울", False),
     ("Paris，", False), ("3个", True), ("", False)],
)  # fmt: skip
def test_has_han(text: str, han: bool) -> None:
    assert has_han(text) is han
