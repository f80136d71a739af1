"""The thinking budget: the engine closes ``<think>`` itself, exactly at the budget."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import LLM, InvalidRequestError, SamplingParams
from engine.reasoning_budget import ReasoningBudget, ThinkTokens
from tests.engine.tiny_models import save_think_tokenizer

THINK = ThinkTokens(open_id=7, close_id=8, forced_close=(1, 8, 1, 1))


def steer_all(budget: ReasoningBudget, sampled: list[int]) -> list[int]:
    return [budget.steer(t) for t in sampled]


@pytest.mark.parametrize(
    ("prompt", "limit", "sampled", "expected", "cut"),
    [
        # The prompt opens thinking: 3 tokens of it, then the forced close, then the answer.
        ([5, 7], 3, [20, 21, 22, 23, 24, 25, 26, 27, 28], [20, 21, 22, 1, 8, 1, 1, 27, 28], True),
        # Budget 0: no thinking at all.
        ([5, 7], 0, [20, 21, 22, 23, 24], [1, 8, 1, 1, 24], True),
        # The model closes thinking itself within the budget: nothing is forced.
        ([5, 7], 3, [20, 8, 30, 31, 32, 33], [20, 8, 30, 31, 32, 33], False),
        # The prompt closed its thinking: the budget is for a block the model opens.
        ([7, 9, 8], 2, [30, 7, 40, 41, 42, 43, 44, 45], [30, 7, 40, 41, 1, 8, 1, 1], True),
        # No thinking anywhere: every sampled token passes.
        ([5], 1, [30, 31, 32], [30, 31, 32], False),
    ],
)
def test_steer_table(
    prompt: list[int], limit: int, sampled: list[int], expected: list[int], cut: bool
) -> None:
    budget = ReasoningBudget(THINK, limit, prompt)
    assert steer_all(budget, sampled) == expected
    assert budget.cut is cut
    assert not budget.thinking or not cut


@pytest.mark.parametrize("bad", [-1, 10**9])
def test_a_negative_or_absurd_budget_is_refused_by_name(bad: int) -> None:
    with pytest.raises(InvalidRequestError, match="max_reasoning_tokens"):
        SamplingParams(max_reasoning_tokens=bad)


@pytest.fixture(scope="module")
def thinking_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    from tests.engine.tiny_models import build_tiny

    out = tmp_path_factory.mktemp("qwen2-think")
    build_tiny(out, model_type="qwen2", vocab_size=272, eos_token_id=256, num_key_value_heads=1)
    return out, save_think_tokenizer(out)


def _prompt(tokenizer: Any) -> list[int]:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Why is the sky blue?"}], add_generation_prompt=True
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.mark.parametrize("limit", [0, 5, 11])
def test_forced_close_appears_exactly_at_the_budget(
    thinking_model: tuple[Path, Any], limit: int
) -> None:
    path, tokenizer = thinking_model
    llm = LLM(str(path), quantization="none")
    think = ThinkTokens.of(tokenizer)
    assert think is not None
    prompt = _prompt(tokenizer)
    base = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)
    free = llm.generate([prompt], base)[0]
    assert think.close_id not in free.token_ids[:limit]  # random weights never close it
    params = SamplingParams(
        max_tokens=24, temperature=0.0, ignore_eos=True, max_reasoning_tokens=limit
    )
    out = llm.generate([prompt], params)[0]
    forced = list(think.forced_close)
    assert out.token_ids[:limit] == free.token_ids[:limit]
    assert out.token_ids[limit : limit + len(forced)] == forced
    assert out.reasoning_cut
    assert "</think>" in out.text  # kept in the text, where the answer splitter finds it
    assert not free.reasoning_cut
    stats = llm.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total


def test_a_model_without_think_tokens_ignores_the_budget(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    path, _ = tiny_factory("qwen2-gqa-bias")
    llm = LLM(str(path), quantization="none")
    prompt = [3, 4, 5, 6]
    base = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
    budgeted = SamplingParams(
        max_tokens=8, temperature=0.0, ignore_eos=True, max_reasoning_tokens=0
    )
    assert (
        llm.generate([prompt], budgeted)[0].token_ids == llm.generate([prompt], base)[0].token_ids
    )
