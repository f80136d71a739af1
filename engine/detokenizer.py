"""IncrementalDetokenizer: token ids in, text deltas out, never half a character."""

from __future__ import annotations

from typing import Any


class IncrementalDetokenizer:
    """Turns one sequence's new tokens into text as they come.

    Decodes a small window of recent tokens twice (with and without the new ones) and
    emits the difference. When that difference ends in U+FFFD the newest tokens are a
    partial UTF-8 character (byte-fallback tokens): wait for the next token instead.
    The window starts inside the prompt so a leading space is decoded in context.
    """

    CONTEXT = 5  # prompt tokens decoded as context

    def __init__(self, tokenizer: Any, prompt_ids: list[int], skip_special_tokens: bool = True):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.ids = list(prompt_ids[-self.CONTEXT :])
        self.prefix_offset = 0
        self.read_offset = len(self.ids)
        self.num_added = 0  # tokens fed by add()

    def _decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens))

    def add(self, token_id: int) -> str:
        """Feed one token; returns the text it completes (possibly "")."""
        self.ids.append(token_id)
        self.num_added += 1
        prefix = self._decode(self.ids[self.prefix_offset : self.read_offset])
        full = self._decode(self.ids[self.prefix_offset :])
        if len(full) <= len(prefix) or full.endswith("\ufffd"):
            return ""
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return full[len(prefix) :]
