"""The transformers backend over the bundled SmolLM2: deltas are HF generate's tokens
decoded; it counts the tokens itself and tells "length" from "stop"."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from app.llm import ChatMessage, GenerationParams, LLMBackendError, LLMDelta
from app.llm.transformers_backend import TransformersBackend
from tests.app.llm.conftest import MODEL, chat_ids

FRANCE = [ChatMessage("user", "What is the capital of France?")]
HAIKU = [ChatMessage("user", "Write a haiku about the sea.")]


@pytest.fixture(scope="module")
def backend(smollm2_path: Path) -> Iterator[TransformersBackend]:
    backend = TransformersBackend(MODEL)
    yield backend
    asyncio.run(backend.close())


def collect(backend: Any, messages: list[ChatMessage], params: GenerationParams) -> list[LLMDelta]:
    async def main() -> list[LLMDelta]:
        return [delta async for delta in backend.stream_chat(messages, params, "test")]

    return list(asyncio.run(main()))


def hf_greedy(backend: TransformersBackend, prompt: list[int], max_tokens: int) -> list[int]:
    with torch.no_grad():
        out = backend.hf_model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=max_tokens,
            do_sample=False,
            pad_token_id=backend.tokenizer.eos_token_id,
        )
    return [int(t) for t in out[0, len(prompt) :]]


@pytest.mark.parametrize(
    ("messages", "max_tokens", "finish_reason"),
    [(FRANCE, 64, "stop"), (HAIKU, 8, "length")],
)
def test_deltas_are_generates_tokens_decoded(
    backend: TransformersBackend,
    messages: list[ChatMessage],
    max_tokens: int,
    finish_reason: str,
) -> None:
    prompt = chat_ids(backend.tokenizer, [{"role": m.role, "content": m.content} for m in messages])
    expected = hf_greedy(backend, prompt, max_tokens)
    *texts, final = collect(backend, messages, GenerationParams(max_tokens=max_tokens))
    assert all(d.text and d.finish_reason is None for d in texts)
    assert "".join(d.text for d in texts) == backend.tokenizer.decode(
        expected, skip_special_tokens=True
    )
    assert final.text == "" and final.finish_reason == finish_reason
    assert final.prompt_tokens == len(prompt)
    assert final.completion_tokens == len(expected)
    assert final.cached_tokens is None  # no prefix cache here
    if finish_reason == "length":
        assert len(expected) == max_tokens and expected[-1] != backend.tokenizer.eos_token_id
    else:
        assert len(expected) < max_tokens and expected[-1] == backend.tokenizer.eos_token_id


def test_count_tokens_and_context_length(backend: TransformersBackend) -> None:
    texts = ["The capital of France is Paris.", "", "héllo 你好 🎉"]
    expected = [len(backend.tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert asyncio.run(backend.count_tokens(texts)) == expected
    assert backend.context_length == backend.hf_model.config.max_position_embeddings
    assert backend.prompt_opens_reasoning(FRANCE) is False


def test_a_broken_chat_template_is_an_llm_backend_error(backend: TransformersBackend) -> None:
    saved = backend.tokenizer.chat_template
    backend.tokenizer.chat_template = "{% for m in messages %}"  # never closed
    try:
        with pytest.raises(LLMBackendError) as info:
            collect(backend, FRANCE, GenerationParams(max_tokens=4))
    finally:
        backend.tokenizer.chat_template = saved
    assert type(info.value) is LLMBackendError
    assert str(info.value).startswith(
        "the chat template failed on this conversation: TemplateSyntaxError: "
    )


def test_a_conversation_too_long_is_refused_with_its_code(backend: TransformersBackend) -> None:
    with pytest.raises(LLMBackendError) as info:
        collect(backend, FRANCE, GenerationParams(max_tokens=backend.context_length))
    assert info.value.code == "context_length_exceeded"


def test_closing_the_stream_stops_the_generation(backend: TransformersBackend) -> None:
    async def main() -> None:
        stream = backend.stream_chat(HAIKU, GenerationParams(max_tokens=500), "closed-early")
        async with contextlib.aclosing(stream):
            first = await anext(stream)
            assert first.text and not first.finished
        assert backend.stats()["num_running"] == 0  # the generation ended with the close

    asyncio.run(main())
