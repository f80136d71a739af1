"""LocalAgreement-2 (from whisper_streaming, Machacek et al. 2023): a word is confirmed
once two successive hypotheses of the growing utterance agree on it, so partial
transcripts do not flicker."""

from __future__ import annotations

import re


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


class LocalAgreement:
    """Confirms the longest common word prefix of the last two hypotheses."""

    def __init__(self) -> None:
        self.confirmed: list[str] = []
        self._previous: list[str] = []

    def update(self, hypothesis: str) -> list[str]:
        """Feed a new full hypothesis; returns the words newly confirmed by it."""
        words = hypothesis.split()
        agreed = 0
        for old, new in zip(self._previous, words, strict=False):
            if _norm(old) != _norm(new):
                break
            agreed += 1
        self._previous = words
        if agreed <= len(self.confirmed):
            return []
        fresh = words[len(self.confirmed) : agreed]
        self.confirmed.extend(fresh)
        return fresh

    @property
    def text(self) -> str:
        return " ".join(self.confirmed)
