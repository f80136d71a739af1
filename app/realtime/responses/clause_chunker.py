"""Cuts the LLM's streamed text at clause boundaries, so the first audio can be
synthesized after a few words instead of after the whole answer."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from app.text_units import count_units, is_cjk_letter

_CLOSE = "”’」』）》〉】"  # closing quotes and brackets go with the clause they close
# A clause ends at . ! ? ; : , or a dash/newline, followed by whitespace, or, at the end
# of what the LLM has written so far, at . ! ? right after a letter ("France." ends a
# sentence now; "3." may still become "3.50", so it waits for the next token). Chinese
# puts no space after its marks, so 。！？；，、： end a clause as soon as they are
# written, as does an ASCII mark right before a Chinese character ("好的!我来"); the
# full-width full stop ． once the next character shows it is not a decimal point ("３．５").
_BOUNDARY = re.compile(
    r"[.!?;:,\n](?=\s)|\s[-–—](?=\s)|(?<=[^\W\d_])[.!?]+$"
    rf"|(?:[。！？；，、：｡]|．(?=[^0-9０-９]))+[{_CLOSE}]*"
    r"|[.!?;:,](?=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff])"
)
# Where a first sentence with no punctuation for a while may be cut: before a word that
# opens a phrase ("This is a classic idiom | that has been passed down..."), so the voice
# starts on a natural phrase instead of waiting for the whole sentence (a long first
# sentence otherwise delays the first audio by the time it takes to write it).
_PHRASE_WORDS = (
    "that|which|who|whose|where|when|while|because|although|and|but|or|so|if|than|through|"
    "with|without|for|from|of|in|on|at|into|about|after|before|during|since|until"
)
_PHRASE = re.compile(rf"\s(?=(?:{_PHRASE_WORDS})\s)", re.IGNORECASE)
FIRST_PHRASE_WORDS = 5  # the fewest units (words, CJK characters) a first phrase holds
# A first sentence the model writes slowly (the 1.5B on two cores: the full stop of a
# seven-word answer comes six tokens after its first word, and the listener waits for
# all of them) may be cut sooner, once it has been written for SLOW_FIRST_S: after
# SLOW_FIRST_WORDS words, before a phrase word or a verb of being or having ("The sky
# is blue | on a clear day.", "The capital of France | is Paris."). A fast model has
# written its short first sentence by then, so its prosody is not cut.
SLOW_FIRST_S = 0.15
SLOW_FIRST_WORDS = 3
# The phrase word may end what is written so far: the words before it are whole, and
# waiting for the token after it would cost one more token.
_SLOW_PHRASE = re.compile(
    rf"\s(?=(?:{_PHRASE_WORDS}|is|are|was|were|has|have|had)(?:\s|$))", re.IGNORECASE
)
# Chinese has no spaces to find a phrase by, so a long first Chinese sentence is cut after
# 的 (where a modifier ends: "洗澡后可以做更多的 | 清洁和保养工作"; not inside 的确, 的话,
# 的士) or before a connective, once the head holds FIRST_PHRASE_CJK characters: Qwen's
# first Chinese sentences ran 15-17 characters before a mark, and the voice waited for
# all of them.
_PHRASE_CJK = re.compile(
    r"(?<=的)(?=[\u4e00-\u9fff])(?![确话士])"
    r"|(?<=[\u4e00-\u9fff])(?=但是|因为|所以|如果|而且|然后|或者|并且|以及|比如|可是|不过|虽然)"
)
FIRST_PHRASE_CJK = 8
# A Chinese character is spoken about as long as three English characters: English is
# read at ~14 characters a second (150 words a minute, spaces counted), Mandarin at 4-5
# characters. The minimums count each CJK character this many times, so a first
# "你好，" (7) waits as "Hi, Sam," (8) does, and "我想一想，" (13) leaves.
CJK_CHAR_WEIGHT = 3
# The longest a piece waits for a boundary, in speech length: past it, the piece is cut
# at its last space (or at the limit, in a run with none: Mandarin with no marks, a URL,
# a small model stuck repeating a syllable). Without a bound, an answer that never
# reached a boundary stayed silent until it ended.
FIRST_MAX_CHARS = 80  # ~5 s of speech, ~13 English words, 26 Chinese characters
MAX_CHARS = 300


def speech_length(text: str) -> int:
    """`text`'s length in English characters' worth of speech (see CJK_CHAR_WEIGHT)."""
    return len(text) + (CJK_CHAR_WEIGHT - 1) * sum(map(is_cjk_letter, text))


class ClauseChunker:
    """Accumulates streamed text and releases speakable pieces at clause boundaries.

    The first piece may be as short as `first_min_chars` (early first audio), and a first
    sentence slow to reach punctuation is cut before a phrase; later pieces wait for
    `min_chars` so the voice's prosody is not chopped into fragments. Both minimums are
    in `speech_length`: a Chinese character counts three (10 is four characters, 40 about
    thirteen).
    """

    def __init__(
        self,
        first_min_chars: int = 10,
        min_chars: int = 40,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first_min_chars = first_min_chars
        self.min_chars = min_chars
        self._clock = clock
        self._buffer = ""
        self._emitted_any = False
        self._first_words_at: float | None = None  # when the first piece's words began

    def push(self, text: str) -> list[str]:
        self._buffer += text
        if self._first_words_at is None and self._buffer.strip():
            self._first_words_at = self._clock()
        pieces: list[str] = []
        while True:
            minimum = self.min_chars if self._emitted_any else self.first_min_chars
            cut = next(
                (
                    m.end()
                    for m in _BOUNDARY.finditer(self._buffer)
                    if speech_length(self._buffer[: m.end()]) >= minimum
                ),
                None,
            )
            if cut is None and not self._emitted_any:
                cut = self._first_phrase()
            if cut is None:
                cut = self._overlong(MAX_CHARS if self._emitted_any else FIRST_MAX_CHARS)
            if cut is None:
                return pieces
            piece, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:]
            if piece:
                pieces.append(piece)
                self._emitted_any = True

    def _first_phrase(self) -> int | None:
        """Where to cut a long (or slowly written) first sentence that has no
        punctuation yet."""
        cuts = []
        if self._first_words_at is not None and (
            self._clock() - self._first_words_at >= SLOW_FIRST_S
        ):
            slow = [
                match.start()
                for match in _SLOW_PHRASE.finditer(self._buffer)
                if count_units(self._buffer[: match.start()]) >= SLOW_FIRST_WORDS
                and speech_length(self._buffer[: match.start()].strip()) >= self.first_min_chars
            ]
            cuts += slow[-1:]  # all that is written up to the last phrase: the longest piece
        for match in _PHRASE.finditer(self._buffer):
            head = self._buffer[: match.start()]
            if (
                count_units(head) >= FIRST_PHRASE_WORDS
                and speech_length(head.strip()) >= self.first_min_chars
            ):
                cuts.append(match.start())
                break
        for match in _PHRASE_CJK.finditer(self._buffer):
            if sum(map(is_cjk_letter, self._buffer[: match.start()])) >= FIRST_PHRASE_CJK:
                cuts.append(match.start())
                break
        return min(cuts, default=None)

    def _overlong(self, maximum: int) -> int | None:
        """Where to cut a piece that reached `maximum` with no boundary (see MAX_CHARS):
        after its last whole word, if that keeps at least half of it, else at the limit."""
        length = 0
        for i, char in enumerate(self._buffer):
            length += CJK_CHAR_WEIGHT if is_cjk_letter(char) else 1
            if length >= maximum:
                spaces = [m.start() for m in re.finditer(r"\s", self._buffer[: i + 1])]
                if spaces and speech_length(self._buffer[: spaces[-1]].strip()) >= maximum // 2:
                    return spaces[-1]
                return i + 1
        return None

    def flush(self) -> list[str]:
        """All that is held (the round ended: a tool runs, or the answer is done); the
        next words start a new wait, so a slow first sentence is timed from them."""
        piece, self._buffer = self._buffer.strip(), ""
        self._first_words_at = None
        return [piece] if piece else []
