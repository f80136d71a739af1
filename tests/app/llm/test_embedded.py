"""The embedded backend over the bundled SmolLM2: its deltas are the engine's tokens
decoded, and its final delta has the engine's finish reason and exact token counts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.llm import ChatMessage, GenerationParams, LLMBackendError, LLMBusyError, LLMDelta
from app.llm.embedded import EmbeddedBackend
from engine import LLM, EngineBusyError, SamplingParams
from tests.app.llm.conftest import MODEL, chat_ids

FRANCE = [ChatMessage("user", "What is the capital of France?")]
HAIKU = [ChatMessage("user", "Write a haiku about the sea.")]


@pytest.fixture(scope="module")
def backend(smollm2_path: Path) -> Iterator[EmbeddedBackend]:
    backend = EmbeddedBackend(MODEL, quantization="none")
    yield backend
    asyncio.run(backend.close())


@pytest.fixture(scope="module")
def reference(smollm2_path: Path) -> LLM:
    """A second engine, run synchronously: what the backend must reproduce."""
    return LLM(MODEL, quantization="none")


def collect(backend: Any, messages: list[ChatMessage], params: GenerationParams) -> list[LLMDelta]:
    async def main() -> list[LLMDelta]:
        return [delta async for delta in backend.stream_chat(messages, params, "test")]

    return list(asyncio.run(main()))


def as_dicts(messages: list[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


@pytest.mark.parametrize(
    ("messages", "max_tokens", "finish_reason"),
    [(FRANCE, 64, "stop"), (HAIKU, 8, "length")],
)
def test_deltas_are_the_engines_tokens_decoded(
    backend: EmbeddedBackend,
    reference: LLM,
    messages: list[ChatMessage],
    max_tokens: int,
    finish_reason: str,
) -> None:
    prompt = chat_ids(reference.tokenizer, as_dicts(messages))
    expected = reference.generate([prompt], SamplingParams(max_tokens=max_tokens, temperature=0.0))[
        0
    ]
    assert expected.finish_reason == finish_reason  # the case is what its name says
    deltas = collect(backend, messages, GenerationParams(max_tokens=max_tokens))
    *texts, final = deltas
    assert all(d.text and d.finish_reason is None for d in texts)
    assert "".join(d.text for d in texts) == reference.tokenizer.decode(
        expected.token_ids, skip_special_tokens=True
    )
    assert final.text == "" and final.finished
    assert final.finish_reason == finish_reason
    assert final.prompt_tokens == len(prompt)
    assert final.completion_tokens == len(expected.token_ids)
    if finish_reason == "length":
        assert final.completion_tokens == max_tokens
    else:
        assert final.completion_tokens < max_tokens
        assert expected.token_ids[-1] == reference.tokenizer.eos_token_id  # counted


def test_cached_tokens_are_the_engines_prefix_cache_hits(backend: EmbeddedBackend) -> None:
    params = GenerationParams(max_tokens=4)
    collect(backend, HAIKU, params)
    again = collect(backend, HAIKU, params)[-1]
    block = backend.llm.stats().kv_block_size
    assert again.cached_tokens == again.prompt_tokens // block * block > 0


def test_a_primed_prompt_is_served_from_the_prefix_cache(backend: EmbeddedBackend) -> None:
    """Priming with the words heard so far computes their KV and answers nothing: the
    answer to the whole turn finds every full block the two prompts share cached."""
    system = ChatMessage("system", "You are Arnold, a ferry timetable voice. Be brief.")
    heard = [system, ChatMessage("user", "When does the last boat to the island of")]
    said = [system, ChatMessage("user", "When does the last boat to the island of Capri leave?")]
    heard_ids = chat_ids(backend.tokenizer, as_dicts(heard))
    said_ids = chat_ids(backend.tokenizer, as_dicts(said))
    shared = next(i for i, (a, b) in enumerate(zip(heard_ids, said_ids, strict=False)) if a != b)
    block = backend.llm.stats().kv_block_size
    assert shared >= block  # the case shares a whole block at least
    asyncio.run(backend.prime(heard, GenerationParams(max_tokens=64)))
    assert backend.llm.stats().num_running == 0
    final = collect(backend, said, GenerationParams(max_tokens=4))[-1]
    assert final.cached_tokens == shared // block * block


def test_a_prime_that_cannot_run_is_skipped(backend: EmbeddedBackend) -> None:
    """A prompt too long for the context is refused for the answer itself, not here."""
    prompt = len(chat_ids(backend.tokenizer, as_dicts(FRANCE)))
    too_many = GenerationParams(max_tokens=backend.context_length - prompt + 1)
    asyncio.run(backend.prime(FRANCE, too_many))  # no error
    assert backend.llm.stats().num_running == 0


def test_a_stop_string_finishes_with_stop(backend: EmbeddedBackend) -> None:
    *texts, final = collect(backend, FRANCE, GenerationParams(max_tokens=64, stop=("Paris",)))
    assert "".join(d.text for d in texts) == "The capital of France is "
    assert final.finish_reason == "stop"


def test_count_tokens_is_the_tokenizers(backend: EmbeddedBackend) -> None:
    texts = ["The capital of France is Paris.", "", "héllo 你好 🎉", "a b c d"]
    expected = [len(backend.tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert asyncio.run(backend.count_tokens(texts)) == expected
    assert asyncio.run(backend.count_tokens([])) == []


def test_context_length_and_reasoning_flag(backend: EmbeddedBackend) -> None:
    assert backend.context_length == backend.llm.max_model_len > 0
    assert backend.prompt_opens_reasoning(FRANCE) is False  # SmolLM2 has no <think>


def test_a_conversation_too_long_is_refused_with_its_code(backend: EmbeddedBackend) -> None:
    prompt = len(chat_ids(backend.tokenizer, as_dicts(FRANCE)))
    room = backend.context_length - prompt
    with pytest.raises(LLMBackendError) as info:
        collect(backend, FRANCE, GenerationParams(max_tokens=room + 1))
    assert info.value.code == "context_length_exceeded"
    assert f"{prompt} prompt tokens + {room + 1} new tokens" in str(info.value)


def test_a_broken_chat_template_is_an_llm_backend_error(backend: EmbeddedBackend) -> None:
    tokenizer = backend.tokenizer
    saved = tokenizer.chat_template
    tokenizer.chat_template = "{{ raise_exception('Conversation roles must alternate') }}"
    try:
        with pytest.raises(LLMBackendError) as info:
            collect(backend, FRANCE, GenerationParams(max_tokens=4))
    finally:
        tokenizer.chat_template = saved
    assert type(info.value) is LLMBackendError
    assert str(info.value) == (
        "the chat template failed on this conversation: "
        "TemplateError: Conversation roles must alternate"
    )
    assert backend.llm.stats().num_running == 0


def test_closing_the_stream_aborts_the_request(backend: EmbeddedBackend) -> None:
    async def main() -> None:
        stream = backend.stream_chat(HAIKU, GenerationParams(max_tokens=200), "closed-early")
        async with contextlib.aclosing(stream):
            first = await anext(stream)
            assert first.text and not first.finished

    asyncio.run(main())
    stats = backend.llm.stats()
    assert stats.num_running == 0 and stats.num_waiting == 0
    assert stats.kv_blocks_free == stats.kv_blocks_total


def test_an_overloaded_engine_refuses_before_the_prompt_is_tokenized(
    backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load the tokenizer thread is busy too: a refusal must not wait behind it."""

    def overloaded() -> None:
        raise EngineBusyError("the engine is overloaded", retry_after_s=3.0)

    async def never(*_args: Any) -> list[int]:
        raise AssertionError("tokenized before refusing")

    monkeypatch.setattr(backend.llm, "check_load", overloaded)
    monkeypatch.setattr(backend.template, "prompt_ids", never)
    with pytest.raises(LLMBusyError) as busy:
        collect(backend, [ChatMessage("user", "Hi")], GenerationParams(max_tokens=4))
    assert busy.value.retry_after_s == 3.0


def test_r1voice_llm_clustering_turns_the_engines_clustering_on(
    smollm2_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.llm import create_backend
    from app.settings import Settings

    monkeypatch.setenv("R1VOICE_LLM_CLUSTERING", "1")
    settings = Settings.from_env()
    assert settings.llm_clustering is True
    clustered = create_backend("embedded", MODEL, "none", clustering=settings.llm_clustering)
    try:
        engine = clustered.llm.engine  # type: ignore[attr-defined]
        assert engine.config.semantic_clustering is True
        assert engine.clusterer is not None and engine.clusterer.signature == "minhash"
        deltas = collect(clustered, FRANCE, GenerationParams(max_tokens=4, temperature=0.0))
        assert deltas[-1].completion_tokens == 4
    finally:
        asyncio.run(clustered.close())
    assert Settings().llm_clustering is False  # opt-in


def test_a_speculating_backend_says_what_decoding_without_it_says(
    smollm2_path: Path, reference: LLM
) -> None:
    """R1VOICE_LLM_SPECULATIVE=ngram reaches the engine (its drafts are verified) and the
    answer's text is that of the engine without speculation."""
    from app.llm import create_backend

    spec = create_backend("embedded", MODEL, "none", engine={"speculative": "ngram"})
    try:
        messages = [
            ChatMessage(
                "user",
                "Read this back to me exactly: a table for four at seven, a table for four "
                "at seven, under the name Martin, a table for four at seven.",
            )
        ]
        prompt = chat_ids(reference.tokenizer, as_dicts(messages))
        expected = reference.generate([prompt], SamplingParams(max_tokens=40, temperature=0.0))
        *texts, final = collect(spec, messages, GenerationParams(max_tokens=40))
        assert "".join(d.text for d in texts) == reference.tokenizer.decode(
            expected[0].token_ids, skip_special_tokens=True
        )
        assert final.completion_tokens == len(expected[0].token_ids)
        assert isinstance(spec, EmbeddedBackend)
        speculator = spec.llm.engine.scheduler.speculator
        assert speculator is not None and speculator.num_accepted > 0  # drafts were taken
    finally:
        asyncio.run(spec.close())


def test_unset_quantization_is_the_models_own(smollm2_path: Path) -> None:
    """No R1VOICE_QUANTIZATION: each model loads at its default, int4 for the 1.5B (its
    Q4_K groups kept as the file has them), int8 for the others; a setting overrides it."""
    from app.llm import create_backend
    from app.settings import Settings
    from engine import default_quantization

    assert Settings().quantization is None
    assert default_quantization("qwen2.5-coder-1.5b-instruct") == "int4"
    assert default_quantization(MODEL) == default_quantization("/some/model") == "int8"
    for asked, loaded in ((None, "int8"), ("none", "none")):
        backend = create_backend("embedded", MODEL, asked)
        try:
            assert backend.llm.engine.config.quantization == loaded  # type: ignore[attr-defined]
        finally:
            asyncio.run(backend.close())
