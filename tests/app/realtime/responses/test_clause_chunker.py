"""The clause chunker that lets the first audio leave early."""

from __future__ import annotations

import pytest

from app.realtime.responses.clause_chunker import (
    CJK_CHAR_WEIGHT,
    FIRST_MAX_CHARS,
    MAX_CHARS,
    SLOW_FIRST_S,
    ClauseChunker,
    speech_length,
)
from app.text_units import join


def _chunk(text: str, step: int = 3) -> list[str]:
    chunker = ClauseChunker(clock=lambda: 0.0)  # written at once: no piece is slow
    out = []
    for i in range(0, len(text), step):
        out += chunker.push(text[i : i + step])
    return out + chunker.flush()


def test_first_clause_leaves_early_then_longer_pieces() -> None:
    text = "Sure, the capital of France is Paris. It is known for art, food, and the Eiffel Tower!"
    pieces = _chunk(text)
    assert pieces[0] == "Sure, the capital of France is Paris."
    assert " ".join(pieces) == text
    assert all(len(p) >= 10 for p in pieces[:-1])


def test_short_first_clause_waits_for_ten_characters() -> None:
    assert _chunk("Hi, there. Ok.")[0] == "Hi, there."


def test_numbers_and_abbreviations_are_not_cut_inside() -> None:
    pieces = _chunk("It costs 3.50 dollars, roughly.")
    assert pieces == ["It costs 3.50 dollars,", "roughly."]


def test_sentence_end_at_end_of_stream_is_spoken_at_once() -> None:
    chunker = ClauseChunker()
    assert chunker.push("The capital of France is Paris.") == ["The capital of France is Paris."]
    assert chunker.push(" It costs 3.") == []  # a number may go on ("3.50")
    assert chunker.push("50 euros") == []


def test_a_long_first_sentence_is_cut_before_a_phrase() -> None:
    text = "This is a classic idiom that has been passed down through generations. It is old."
    pieces = _chunk(text)
    assert pieces[0] == "This is a classic idiom"  # not the whole 11-word sentence
    assert pieces[1] == "that has been passed down through generations."
    assert " ".join(pieces) == text


def test_short_sentences_and_later_ones_are_not_cut_at_phrases() -> None:
    assert _chunk("The capital of France is Paris.") == ["The capital of France is Paris."]
    later = "Yes, indeed. The old town has many houses that were built in the middle ages."
    assert _chunk(later) == ["Yes, indeed.", later[len("Yes, indeed. ") :]]


class _Tokens:
    """Pushes words as a model streams them, `seconds` apart, and records the time each
    piece leaves at."""

    def __init__(self, seconds: float) -> None:
        self.now, self.seconds = 100.0, seconds
        self.chunker = ClauseChunker(clock=lambda: self.now)
        self.left: list[tuple[str, float]] = []

    def write(self, text: str) -> list[str]:
        start = self.now
        for i, word in enumerate(text.split(" ")):
            pieces = self.chunker.push(word if i == 0 else f" {word}")
            self.left += [(piece, round(self.now - start, 3)) for piece in pieces]
            self.now += self.seconds
        return [piece for piece, _ in self.left] + self.chunker.flush()


@pytest.mark.parametrize(
    ("text", "first", "at"),
    [
        ("The capital of France is Paris.", "The capital of France", 0.2),  # on " is"
        ("The sky is blue on a clear day.", "The sky is blue", 0.2),
        ("An example of a yellow fruit is an apple.", "An example of a yellow fruit", 0.3),
        ("A spider has eight legs.", "A spider has eight legs.", 0.2),  # "A spider": 2 words
    ],
)
def test_a_slowly_written_first_sentence_leaves_at_a_phrase(
    text: str, first: str, at: float
) -> None:
    """A model writing a word every 50 ms (the 1.5B on two cores): once the first
    sentence has taken SLOW_FIRST_S, it leaves at the phrase word just written, after
    three words or more, instead of at its full stop."""
    assert SLOW_FIRST_S < 0.2
    tokens = _Tokens(0.05)
    pieces = tokens.write(text)
    assert tokens.left[0] == (first, at)
    assert " ".join(pieces) == text


def test_only_a_slow_first_sentence_is_cut_short() -> None:
    fast = _Tokens(0.01)  # the whole sentence written in 60 ms
    assert fast.write("The capital of France is Paris.") == ["The capital of France is Paris."]
    slow = _Tokens(0.05)
    later = "The old town has many houses that were built in the middle ages."
    assert slow.write(f"Yes, indeed. {later}") == ["Yes, indeed.", later]


def test_a_flush_starts_the_next_wait_afresh() -> None:
    """Bug: between tool rounds the chunker is flushed; a short held "Sure." kept its
    time, so the next round's quickly written sentence was cut as if slow."""
    tokens = _Tokens(0.01)
    assert tokens.chunker.push("Sure.") == []  # under the first piece's ten characters
    assert tokens.chunker.flush() == ["Sure."]
    tokens.now += 2.0  # the tool ran
    assert tokens.write("The time in Paris is 3 pm.") == ["The time in Paris is 3 pm."]


def test_a_run_with_no_boundary_leaves_at_the_longest_a_piece_waits() -> None:
    """A model stuck on a syllable (SmolLM2's "Mebememem..." to a misheard question) or a
    long unpunctuated list: the voice starts at FIRST_MAX_CHARS, not at the answer's end."""
    chunker = ClauseChunker()
    pieces = chunker.push("Meb")
    for _ in range(200):
        pieces += chunker.push("em")
    assert [len(p) for p in pieces[:2]] == [FIRST_MAX_CHARS, MAX_CHARS]  # at the limit
    assert "".join(pieces + chunker.flush()) == "Meb" + "em" * 200

    fruit = "apples bananas cherries lemons mangoes pears plums peaches melons kiwis limes"
    words = _chunk(f"{fruit} {fruit} {fruit} {fruit} {fruit} figs.", step=4)
    assert FIRST_MAX_CHARS // 2 <= len(words[0]) < FIRST_MAX_CHARS
    assert all(fruit.split().count(w) or w == "figs." for p in words for w in p.split())
    assert " ".join(words) == f"{fruit} {fruit} {fruit} {fruit} {fruit} figs."


def test_chinese_with_no_marks_leaves_at_the_limit_too() -> None:
    text = "我" * 40 + "。"
    pieces = _chunk(text, step=1)
    assert pieces[0] == "我" * (FIRST_MAX_CHARS // CJK_CHAR_WEIGHT + 1)  # 81 >= 80
    assert "".join(pieces) == text


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        (  # a first clause of four characters or more leaves at its comma; later pieces
            # wait for ~13 characters
            "你好！我是你的语音助手，很高兴认识你。今天想聊点什么？",
            ["你好！我是你的语音助手，", "很高兴认识你。今天想聊点什么？"],
        ),
        ("你好，世界。", ["你好，世界。"]),  # "你好，" weighs 7 < 10
        ("我想一想，好的。", ["我想一想，", "好的。"]),  # 13 >= 10
        ("北京是中国的首都。它很古老。", ["北京是中国的首都。", "它很古老。"]),
        ("没问题!我来帮你查一下。", ["没问题!", "我来帮你查一下。"]),  # an ASCII mark
        ("价格是3.50元，很便宜。", ["价格是3.50元，", "很便宜。"]),
        ("圆周率是３．１４，对吧？", ["圆周率是３．１４，", "对吧？"]),
        ("他说：“你好。”然后走了。", ["他说：“你好。”", "然后走了。"]),  # 他说： is 7
        ("东京タワーは高いです。", ["东京タワーは高いです。"]),
        (  # mixed: an English sentence then a Chinese one
            "Sure, the capital is Beijing. 北京很大，有很多名胜古迹。",
            ["Sure, the capital is Beijing.", "北京很大，有很多名胜古迹。"],
        ),
        (  # a long first Chinese sentence is cut after 的 once 8 characters are written
            "洗澡后可以做更多的清洁和保养工作。",
            ["洗澡后可以做更多的", "清洁和保养工作。"],
        ),
        ("我觉得这个问题的答案很简单。", ["我觉得这个问题的", "答案很简单。"]),
        (  # 的话 is one word; the cut comes before the connective
            "你说的话我都听到了因为我一直在听。",
            ["你说的话我都听到了", "因为我一直在听。"],
        ),
        ("他是我最好的朋友。", ["他是我最好的朋友。"]),  # 5 characters before 的: whole
        ("所以我们明天去公园散步吧。", ["所以我们明天去公园散步吧。"]),  # a connective first
        (  # a long first sentence counts its units: 9 characters before the phrase
            "这是一个经典的成语 that has been passed down through generations.",
            ["这是一个经典的成语", "that has been passed down through generations."],
        ),
    ],
)
def test_chinese_clauses(text: str, pieces: list[str]) -> None:
    assert _chunk(text) == pieces
    # token by token the cuts may come a closing quote earlier; the text is all there
    assert join(_chunk(text, step=1)) == text


def test_a_chinese_clause_leaves_as_soon_as_it_ends() -> None:
    chunker = ClauseChunker()
    assert chunker.push("北京是中国的首都，") == ["北京是中国的首都，"]  # no space needed
    english = ClauseChunker()
    assert english.push("Beijing is the capital,") == []  # a comma may be "1,000"
    assert english.push(" and") == ["Beijing is the capital,"]


@pytest.mark.parametrize(
    ("text", "length"),
    [("Hi, Sam,", 8), ("你好，", 7), ("我想一想，", 13), ("Hi 你好", 9), ("", 0)],
)
def test_speech_length_counts_a_chinese_character_three_times(text: str, length: int) -> None:
    assert speech_length(text) == length
