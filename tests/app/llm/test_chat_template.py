"""The chat template, written once: prompt ids, `<think>` detection, token counts, refusals."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from app.llm import ChatMessage, LLMBackendError, LLMBusyError
from app.llm import chat_template as ct
from tests.app.llm.conftest import chat_ids

CONVERSATION = [
    ChatMessage("system", "You are brief."),
    ChatMessage("user", "What is the capital of France?"),
    ChatMessage("assistant", "Paris."),
    ChatMessage("user", "And of Italy?"),
]
R1_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|><think>\n{% endif %}"
)


def test_prompt_ids_are_the_templates_ids(tokenizer: Any) -> None:
    expected = chat_ids(tokenizer, [{"role": m.role, "content": m.content} for m in CONVERSATION])
    assert ct.encode_prompt(tokenizer, CONVERSATION) == expected
    assert tokenizer.decode(expected).endswith("<|im_start|>assistant\n")


def test_template_error_is_an_llm_backend_error_naming_it(tokenizer: Any) -> None:
    tokenizer.chat_template = "{{ raise_exception('Conversation roles must alternate') }}"
    with pytest.raises(LLMBackendError) as info:
        ct.encode_prompt(tokenizer, CONVERSATION)
    assert type(info.value) is LLMBackendError and info.value.code == "llm_error"
    assert str(info.value) == (
        "the chat template failed on this conversation: "
        "TemplateError: Conversation roles must alternate"
    )


def test_template_syntax_error_and_missing_template(tokenizer: Any) -> None:
    tokenizer.chat_template = "{% for m in messages %}"  # never closed
    with pytest.raises(LLMBackendError, match=r"^the chat template failed on this conversation: "):
        ct.encode_prompt(tokenizer, CONVERSATION)
    tokenizer.chat_template = None
    with pytest.raises(LLMBackendError, match=r"^the chat template failed on this conversation: "):
        ct.encode_prompt(tokenizer, CONVERSATION)
    with pytest.raises(LLMBackendError, match="no tokenizer"):
        ct.encode_prompt(None, CONVERSATION)


def test_opens_reasoning(tokenizer: Any) -> None:
    assert ct.opens_reasoning(tokenizer) is False  # SmolLM2's template
    tokenizer.chat_template = R1_TEMPLATE
    assert ct.opens_reasoning(tokenizer) is True
    assert ct.ChatTemplate(tokenizer).opens_reasoning is True
    tokenizer.chat_template = "{{ raise_exception('no') }}"
    assert ct.opens_reasoning(tokenizer) is False
    assert ct.opens_reasoning(None) is False


def test_count_tokens_is_the_tokenizers_count_without_special_tokens(tokenizer: Any) -> None:
    texts = ["Hello world", "", "Paris, héllo 你好 🎉", "<|im_start|>"]
    expected = [len(tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert ct.count_tokens(tokenizer, texts) == expected
    assert expected[0] > 1 and expected[1] == 0
    assert ct.count_tokens(tokenizer, []) == []


def test_check_fits_refuses_with_context_length_exceeded() -> None:
    ct.check_fits(100, 28, 128)  # exactly fits
    with pytest.raises(LLMBackendError) as info:
        ct.check_fits(100, 29, 128)
    assert info.value.code == "context_length_exceeded"
    assert str(info.value) == (
        "conversation too long: 100 prompt tokens + 29 new tokens exceed the model context of 128"
    )


def test_chat_template_runs_on_its_own_tokenizer_thread(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real_encode, real_count = ct.encode_prompt, ct.count_tokens

    def encode(tok: Any, messages: list[ChatMessage]) -> list[int]:
        threads.append(threading.current_thread().name)
        return real_encode(tok, messages)

    def count(tok: Any, texts: list[str]) -> list[int]:
        threads.append(threading.current_thread().name)
        return real_count(tok, texts)

    monkeypatch.setattr(ct, "encode_prompt", encode)
    monkeypatch.setattr(ct, "count_tokens", count)
    template = ct.ChatTemplate(tokenizer)

    async def main() -> tuple[list[int], list[int]]:
        return (
            await template.prompt_ids(CONVERSATION, 16, 2048),
            await template.count_tokens(["Hello world"]),
        )

    try:
        ids, counts = asyncio.run(main())
    finally:
        template.close()
    assert ids == real_encode(tokenizer, CONVERSATION)
    assert counts == real_count(tokenizer, ["Hello world"])
    assert len(threads) == 2
    assert all(name.startswith("llm-tokenizer") for name in threads), threads


def test_prompt_ids_refuses_a_prompt_that_does_not_fit(tokenizer: Any) -> None:
    template = ct.ChatTemplate(tokenizer)
    n = len(ct.encode_prompt(tokenizer, CONVERSATION))
    try:
        assert len(asyncio.run(template.prompt_ids(CONVERSATION, 10, n + 10))) == n
        with pytest.raises(LLMBackendError) as info:
            asyncio.run(template.prompt_ids(CONVERSATION, 11, n + 10))
        assert info.value.code == "context_length_exceeded"
    finally:
        template.close()


def test_a_full_tokenizer_queue_is_busy(tokenizer: Any) -> None:
    template = ct.ChatTemplate(tokenizer)
    template._executor.max_pending = 1
    release = threading.Event()
    real_count = ct.count_tokens

    async def main() -> None:
        blocked = asyncio.ensure_future(template._run(release.wait))
        await asyncio.sleep(0)  # the first call is now pending
        try:
            with pytest.raises(LLMBusyError, match="the tokenizer is overloaded"):
                await template.count_tokens(["x"])
        finally:
            release.set()
            await blocked
        assert await template.count_tokens(["x"]) == real_count(tokenizer, ["x"])

    try:
        asyncio.run(main())
    finally:
        template.close()


class CountingTokenizer:
    """Refuses to be called: proves a hopeless prompt is refused before tokenizing."""

    chat_template = None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the tokenizer was used ({name})")


def test_a_prompt_that_cannot_fit_is_refused_before_tokenizing() -> None:
    """Bug: 19 MB of conversation was tokenized (9-16 s) on every response.create before
    its refusal."""
    template = ct.ChatTemplate.__new__(ct.ChatTemplate)
    template.tokenizer = CountingTokenizer()
    huge = [ChatMessage("user", "word " * (ct.MAX_CHARS_PER_TOKEN * 2048 // 5 + 1))]

    async def main() -> None:
        with pytest.raises(LLMBackendError) as chat:
            await template.prompt_ids(huge, 16, 2048)
        assert chat.value.code == "context_length_exceeded"
        with pytest.raises(LLMBackendError) as text:
            await template.text_ids(huge[0].content, 16, 2048)
        assert text.value.code == "context_length_exceeded"

    asyncio.run(main())
