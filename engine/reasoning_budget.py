"""ReasoningBudget: a bound on how long an R1 model thinks before it answers.

DeepSeek-R1 models write ``<think> ... </think>`` before their answer; in a voice turn
hundreds of thinking tokens are seconds of silence. With ``SamplingParams.
max_reasoning_tokens`` set, the engine lets the model think for that many tokens and
then appends the end of thinking itself (``\\n</think>\\n\\n``, what R1 writes there),
one token per step in place of the sampled one, so the answer begins. The idea is the
"budget forcing" of s1 (Muennighoff et al., 2025), applied as a hard stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPEN_TAG, CLOSE_TAG = "<think>", "</think>"
FORCED_CLOSE_TEXT = "\n</think>\n\n"


@dataclass(frozen=True)
class ThinkTokens:
    """The tokenizer's thinking markers (each a single token) and the forced closing."""

    open_id: int
    close_id: int
    forced_close: tuple[int, ...]

    @classmethod
    def of(cls, tokenizer: Any) -> ThinkTokens | None:
        """The markers of ``tokenizer``, or None when it has no single-token ``<think>``
        and ``</think>`` (a model that does not think: a budget then changes nothing)."""
        if tokenizer is None:
            return None
        ids = [tokenizer.encode(tag, add_special_tokens=False) for tag in (OPEN_TAG, CLOSE_TAG)]
        if any(len(i) != 1 for i in ids):
            return None
        forced = tuple(tokenizer.encode(FORCED_CLOSE_TEXT, add_special_tokens=False))
        if ids[1][0] not in forced:
            return None
        return cls(ids[0][0], ids[1][0], forced)

    def prompt_opens(self, prompt_ids: list[int]) -> bool:
        """Whether the prompt ends inside a thinking block (R1-Distill's template opens
        it in the generation prompt)."""
        for token in reversed(prompt_ids):
            if token == self.close_id:
                return False
            if token == self.open_id:
                return True
        return False


class ReasoningBudget:
    """One sequence's thinking: ``steer(sampled)`` returns the token to append."""

    def __init__(self, think: ThinkTokens, budget: int, prompt_ids: list[int]) -> None:
        self.think = think
        self.budget = budget
        self.thinking = think.prompt_opens(prompt_ids)
        self.used = 0  # tokens the model wrote inside this thinking block
        self.cut = False  # the engine closed thinking at the budget
        self._forced: list[int] = []

    @classmethod
    def of(
        cls, think: ThinkTokens | None, budget: int | None, prompt_ids: list[int]
    ) -> ReasoningBudget | None:
        """The budget of a request, or None when it sets none or the model does not think."""
        return None if think is None or budget is None else cls(think, budget, prompt_ids)

    def steer(self, sampled: int) -> int:
        if self._forced:
            token = self._forced.pop(0)
            self.thinking = bool(self._forced)
            return token
        if not self.thinking:
            if sampled == self.think.open_id:
                self.thinking, self.used = True, 0
            return sampled
        if sampled == self.think.close_id:
            self.thinking = False
            return sampled
        if self.used >= self.budget:
            self.cut = True
            self._forced = list(self.think.forced_close)
            return self.steer(sampled)
        self.used += 1
        return sampled
