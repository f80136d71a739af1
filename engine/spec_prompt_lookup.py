"""PromptLookup: draft tokens from the sequence itself (n-gram match, no second model)."""

from __future__ import annotations


class PromptLookup:
    """Proposes the tokens that followed the latest earlier occurrence of the sequence's
    last n tokens (n from ``max_n`` down to ``min_n``), in its prompt or its answer.

    A voice answer often repeats the conversation (a name, a number read back, the
    question's own words): there the continuation is a good guess and costs nothing to
    make. The index grows by the tokens appended since the last call, so each proposal
    costs a few dictionary lookups, not a scan of the context.
    """

    def __init__(self, min_n: int, max_n: int) -> None:
        self.min_n, self.max_n = min_n, max_n
        # n-gram -> the index just after its most recent occurrence that has a successor
        self.last_end: dict[tuple[int, ...], int] = {}
        self.indexed = 0  # ends below this are in last_end

    def _index(self, tokens: list[int]) -> None:
        # An n-gram ending at e (tokens[e - n:e]) is usable once tokens[e] exists.
        for end in range(max(self.indexed, self.min_n), len(tokens)):
            for n in range(self.min_n, min(self.max_n, end) + 1):
                self.last_end[tuple(tokens[end - n : end])] = end
        self.indexed = max(self.indexed, len(tokens))

    def propose(self, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens to follow ``tokens`` (the whole sequence); [] when its
        last n-gram occurred nowhere earlier."""
        if k <= 0:
            return []
        self._index(tokens)
        for n in range(min(self.max_n, len(tokens) - 1), self.min_n - 1, -1):
            end = self.last_end.get(tuple(tokens[len(tokens) - n :]))
            if end is not None:
                return tokens[end : end + k]
        return []
