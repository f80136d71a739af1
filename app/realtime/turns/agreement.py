"""LocalAgreement-2 (from whisper_streaming, Machacek et al. 2023): a word is confirmed
once two successive hypotheses of the growing utterance agree on it, so partial
transcripts do not flicker. "Word" is a text unit (see app.text_units): Chinese is
agreed on character by character, other scripts word by word."""

from __future__ import annotations

import re

from app.text_units import join, units


def _norm(unit: str) -> str:
    # \w is Unicode: CJK characters stay, "，" and "。" go as "," and "." do.
    return re.sub(r"[^\w']", "", unit.lower())


class LocalAgreement:
    """Confirms the longest common unit prefix of the last two hypotheses."""

    def __init__(self) -> None:
        self.confirmed: list[str] = []
        self._previous: list[str] = []

    def update(self, hypothesis: str) -> list[str]:
        """Feed a new full hypothesis; returns the units newly confirmed by it."""
        words = units(hypothesis)
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
        """The confirmed units as text: no spaces between Chinese characters."""
        return join(self.confirmed)
