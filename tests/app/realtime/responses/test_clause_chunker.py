"""The clause chunker that lets the first audio leave early."""

from __future__ import annotations

from app.realtime.responses.clause_chunker import ClauseChunker


def _chunk(text: str, step: int = 3) -> list[str]:
    chunker = ClauseChunker()
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
