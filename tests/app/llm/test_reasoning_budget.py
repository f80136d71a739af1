"""The embedded backend's thinking budget, on a tiny R1-style model: the stream carries
the model's own first N thinking tokens, then the engine's `</think>`, and says so."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.llm import ChatMessage, GenerationParams, LLMDelta
from app.llm.embedded import EmbeddedBackend
from engine import LLM, SamplingParams
from engine.reasoning_budget import ThinkTokens
from tests.app.llm.conftest import chat_ids

QUESTION = [ChatMessage("user", "Why is the sky blue?")]
MAX_TOKENS = 24


@pytest.fixture(scope="module")
def backend(thinking_model: Path) -> Iterator[EmbeddedBackend]:
    backend = EmbeddedBackend(str(thinking_model), quantization="none")
    yield backend
    asyncio.run(backend.close())


@pytest.fixture(scope="module")
def reference(thinking_model: Path) -> LLM:
    """A second engine, run synchronously: what the backend must reproduce."""
    return LLM(str(thinking_model), quantization="none")


def collect(backend: EmbeddedBackend, params: GenerationParams) -> list[LLMDelta]:
    async def main() -> list[LLMDelta]:
        return [delta async for delta in backend.stream_chat(QUESTION, params, "test")]

    return asyncio.run(main())


@pytest.mark.parametrize("budget", [0, 4, 9])
def test_thinking_is_cut_after_exactly_the_budget(
    backend: EmbeddedBackend, reference: LLM, budget: int
) -> None:
    tokenizer = reference.tokenizer
    think = ThinkTokens.of(tokenizer)
    assert think is not None
    prompt = chat_ids(tokenizer, [{"role": "user", "content": QUESTION[0].content}])
    free = reference.generate([prompt], SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))[0]
    thought = free.token_ids[:budget]
    # random weights: the free run neither ends nor closes thinking within the budget
    assert think.close_id not in thought and tokenizer.eos_token_id not in thought

    cut = reference.generate(
        [prompt],
        SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, max_reasoning_tokens=budget),
    )[0]

    *texts, final = collect(
        backend, GenerationParams(max_tokens=MAX_TOKENS, max_reasoning_tokens=budget)
    )
    text = "".join(d.text for d in texts)
    thought_text = tokenizer.decode(thought)
    assert text.startswith(thought_text + "\n</think>\n\n")
    assert text == cut.text
    assert final.finished and final.reasoning_cut
    ends = [len("".join(d.text for d in texts[: i + 1])) for i in range(len(texts))]
    # the deltas of the model's own thinking are not cut; from the forced close on, all are
    assert [d.reasoning_cut for d in texts] == [end > len(thought_text) for end in ends]


def test_no_budget_changes_nothing(backend: EmbeddedBackend, reference: LLM) -> None:
    prompt = chat_ids(reference.tokenizer, [{"role": "user", "content": QUESTION[0].content}])
    free = reference.generate([prompt], SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))[0]
    *texts, final = collect(backend, GenerationParams(max_tokens=MAX_TOKENS))
    assert "".join(d.text for d in texts) == free.text
    assert not final.reasoning_cut and not any(d.reasoning_cut for d in texts)
