"""SamplingParams: how one request picks its tokens and when it stops."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import InvalidRequestError

# Below this temperature sampling is greedy: dividing logits by a denormal (1e-40, 5e-324)
# overflows them to inf and softmax to NaN (vLLM uses the same epsilon).
GREEDY_BELOW = 1e-5
MAX_TEMPERATURE = 100.0
SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.Generator.manual_seed takes
# A thinking budget above this is a mistake (no model's context holds it), not a choice.
MAX_REASONING_TOKENS = 1 << 20


@dataclass
class SamplingParams:
    """Per-request decoding settings, validated on creation.

    ``temperature`` below ``GREEDY_BELOW`` (0 included) is greedy decoding. ``top_k <= 0`` and ``top_p == 1`` disable
    those filters. ``stop`` strings end generation and are not part of the text;
    ``stop_token_ids`` add to the model's EOS ids (ignored with ``ignore_eos``).
    ``seed`` makes sampling reproducible whatever else is in the batch.
    ``max_reasoning_tokens`` bounds an R1 model's thinking (engine.reasoning_budget);
    None: unbounded.
    """

    max_tokens: int = 128
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    stop: list[str] | str | None = None
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    seed: int | None = None
    skip_special_tokens: bool = True
    max_reasoning_tokens: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        self.stop = [s for s in (self.stop or []) if s]
        if self.max_tokens <= 0:
            raise InvalidRequestError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0.0 <= self.temperature <= MAX_TEMPERATURE:  # NaN fails this too
            raise InvalidRequestError(
                f"temperature must be in [0, {MAX_TEMPERATURE:g}], got {self.temperature}"
            )
        if not 0.0 < self.top_p <= 1.0:
            raise InvalidRequestError(f"top_p must be in (0, 1], got {self.top_p}")
        if any(t < 0 for t in self.stop_token_ids):
            raise InvalidRequestError("stop_token_ids must be >= 0")
        budget = self.max_reasoning_tokens
        if budget is not None and not 0 <= budget <= MAX_REASONING_TOKENS:
            raise InvalidRequestError(
                f"max_reasoning_tokens must be in [0, {MAX_REASONING_TOKENS}] or None, got {budget}"
            )
        if self.seed is not None and not SEED_RANGE[0] <= self.seed <= SEED_RANGE[1]:
            raise InvalidRequestError(f"seed must be a 64-bit integer, got {self.seed}")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW
