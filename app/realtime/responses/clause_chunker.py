"""Cuts the LLM's streamed text at clause boundaries, so the first audio can be
synthesized after a few words instead of after the whole answer."""

from __future__ import annotations

import re

# A clause ends at . ! ? ; : , or a dash/newline, followed by whitespace, or, at the end
# of what the LLM has written so far, at . ! ? right after a letter ("France." ends a
# sentence now; "3." may still become "3.50", so it waits for the next token).
_BOUNDARY = re.compile(r"[.!?;:,\n](?=\s)|\s[-–—](?=\s)|(?<=[^\W\d_])[.!?]+$")
# Where a first sentence with no punctuation for a while may be cut: before a word that
# opens a phrase ("This is a classic idiom | that has been passed down..."), so the voice
# starts on a natural phrase instead of waiting for the whole sentence (a long first
# sentence otherwise delays the first audio by the time it takes to write it).
_PHRASE = re.compile(
    r"\s(?=(?:that|which|who|whose|where|when|while|because|although|and|but|or|so|if|"
    r"than|through|with|without|for|from|of|in|on|at|into|about|after|before|during|"
    r"since|until)\s)",
    re.IGNORECASE,
)
FIRST_PHRASE_WORDS = 5  # the fewest words a first piece cut at a phrase may hold


class ClauseChunker:
    """Accumulates streamed text and releases speakable pieces at clause boundaries.

    The first piece may be as short as `first_min_chars` (early first audio), and a first
    sentence slow to reach punctuation is cut before a phrase; later pieces wait for
    `min_chars` so the voice's prosody is not chopped into fragments.
    """

    def __init__(self, first_min_chars: int = 10, min_chars: int = 40) -> None:
        self.first_min_chars = first_min_chars
        self.min_chars = min_chars
        self._buffer = ""
        self._emitted_any = False

    def push(self, text: str) -> list[str]:
        self._buffer += text
        pieces: list[str] = []
        while True:
            minimum = self.min_chars if self._emitted_any else self.first_min_chars
            cut = next(
                (m.end() for m in _BOUNDARY.finditer(self._buffer) if m.end() >= minimum), None
            )
            if cut is None and not self._emitted_any:
                cut = self._first_phrase()
            if cut is None:
                return pieces
            piece, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:]
            if piece:
                pieces.append(piece)
                self._emitted_any = True

    def _first_phrase(self) -> int | None:
        """Where to cut a long first sentence that has no punctuation yet."""
        for match in _PHRASE.finditer(self._buffer):
            head = self._buffer[: match.start()]
            if (
                len(head.split()) >= FIRST_PHRASE_WORDS
                and len(head.strip()) >= self.first_min_chars
            ):
                return match.start()
        return None

    def flush(self) -> list[str]:
        piece, self._buffer = self._buffer.strip(), ""
        return [piece] if piece else []
