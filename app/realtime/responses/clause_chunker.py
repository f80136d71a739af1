"""Cuts the LLM's streamed text at clause boundaries, so the first audio can be
synthesized after a few words instead of after the whole answer."""

from __future__ import annotations

import re

# A clause ends at . ! ? ; : , or a dash/newline, followed by whitespace, or, at the end
# of what the LLM has written so far, at . ! ? right after a letter ("France." ends a
# sentence now; "3." may still become "3.50", so it waits for the next token).
_BOUNDARY = re.compile(r"[.!?;:,\n](?=\s)|\s[-–—](?=\s)|(?<=[^\W\d_])[.!?]+$")


class ClauseChunker:
    """Accumulates streamed text and releases speakable pieces at clause boundaries.

    The first piece may be as short as `first_min_chars` (early first audio); later
    pieces wait for `min_chars` so the voice's prosody is not chopped into fragments.
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
            cut = None
            for match in _BOUNDARY.finditer(self._buffer):
                if match.end() >= minimum:
                    cut = match.end()
                    break
            if cut is None:
                return pieces
            piece, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:]
            if piece:
                pieces.append(piece)
                self._emitted_any = True

    def flush(self) -> list[str]:
        piece, self._buffer = self._buffer.strip(), ""
        return [piece] if piece else []
