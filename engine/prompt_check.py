"""Request checks: a prompt (text or token ids) -> token ids the engine can run; a priority."""

from __future__ import annotations

from typing import Any

from engine.errors import InvalidRequestError

Prompt = str | list[int]
PRIORITY_RANGE = (-(2**31), 2**31 - 1)  # a priority beyond a float's range broke queue order


def check_priority(priority: int | None) -> None:
    """InvalidRequestError unless `priority` is None or a 32-bit integer."""
    low, high = PRIORITY_RANGE
    if priority is not None and not low <= priority <= high:
        raise InvalidRequestError(f"priority must be in [{low}, {high}], got {priority}")


def tokenize(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids of a prompt; text needs the model's tokenizer."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise InvalidRequestError("this model has no tokenizer: pass token ids")
        return list(tokenizer.encode(prompt, add_special_tokens=False))
    return [int(t) for t in prompt]


def check_prompt(token_ids: list[int], vocab: int, max_model_len: int) -> list[int]:
    """InvalidRequestError unless the ids are a non-empty prompt that leaves room for
    at least one generated token."""
    if not token_ids:
        raise InvalidRequestError("the prompt is empty")
    if any(not 0 <= t < vocab for t in token_ids):
        raise InvalidRequestError(f"prompt token ids must be in [0, {vocab})")
    if len(token_ids) >= max_model_len:
        raise InvalidRequestError(
            f"the prompt has {len(token_ids)} tokens; the model context is "
            f"{max_model_len} (prompt + at least one generated token)"
        )
    return token_ids
