"""The chat template, applied in one place for every backend: messages -> prompt token ids.

The functions are blocking tokenizer work; `ChatTemplate` runs them on a backend's own
tokenizer executor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from app.executor import ExecutorBusyError, ModelExecutor
from app.llm.backend import ChatMessage, LLMBackendError, LLMBusyError

T = TypeVar("T")

THINK_OPEN = "<think>"


def encode_prompt(tokenizer: Any, messages: list[ChatMessage]) -> list[int]:
    """The prompt's token ids: the chat template with the assistant's turn opened.

    Any failure of the template (a jinja TemplateError such as "roles must alternate", a
    tokenizer without a template) is raised as `LLMBackendError` naming what failed."""
    if tokenizer is None:
        raise LLMBackendError("the model has no tokenizer, so no chat template to apply")
    try:
        encoded: Any = tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            tokenize=True,
        )
        ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
        return [int(t) for t in ids]
    except Exception as exc:
        raise LLMBackendError(
            f"the chat template failed on this conversation: {type(exc).__name__}: {exc}"
        ) from exc


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """A raw prompt's token ids (no chat template; special tokens as the tokenizer adds
    them, as vLLM's /v1/completions does)."""
    if tokenizer is None:
        raise LLMBackendError("the model has no tokenizer, so the prompt cannot be encoded")
    if not text:
        raise LLMBackendError("the prompt is empty")
    return [int(t) for t in tokenizer(text)["input_ids"]]


def opens_reasoning(tokenizer: Any) -> bool:
    """Whether the template's generation prompt already opens a `<think>` block, as the
    DeepSeek-R1-Distill templates do. Asked once, at load."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return False
    try:
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False
        )
    except Exception:  # a template that refuses this probe fails, named, on real requests
        return False
    return str(prompt).rstrip().endswith(THINK_OPEN)


def count_tokens(tokenizer: Any, texts: list[str]) -> list[int]:
    """Tokens of each text without special tokens (blocking)."""
    if not texts:
        return []
    if tokenizer is None:
        raise LLMBackendError("the model has no tokenizer, so tokens cannot be counted")
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [len(ids) for ids in encoded]


# No token of a real tokenizer spans more characters than this, so a prompt longer than
# this many characters per context token cannot fit and is refused before tokenizing
# (19 MB of conversation once took 9-16 s of tokenizer time per request to refuse).
MAX_CHARS_PER_TOKEN = 32


def check_unicode(texts: list[str]) -> None:
    """Refuse (code "invalid_value") text the tokenizer cannot encode: a lone surrogate
    ("\\ud800" in JSON) once reached it and failed the request with a 500."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LLMBackendError(
                f"the text is not valid Unicode (a lone surrogate at character {exc.start})",
                code="invalid_value",
            ) from exc


def check_length(chars: int, context_length: int) -> None:
    if chars > MAX_CHARS_PER_TOKEN * context_length:
        raise LLMBackendError(
            f"conversation too long: {chars} characters cannot fit the model context of "
            f"{context_length} tokens",
            code="context_length_exceeded",
        )


def check_fits(prompt_tokens: int, max_tokens: int, context_length: int) -> None:
    """Refuse (code "context_length_exceeded") a prompt that leaves no room for `max_tokens`."""
    if prompt_tokens + max_tokens > context_length:
        raise LLMBackendError(
            f"conversation too long: {prompt_tokens} prompt tokens + {max_tokens} new tokens "
            f"exceed the model context of {context_length}",
            code="context_length_exceeded",
        )


class ChatTemplate:
    """A backend's tokenizer work off the event loop: prompts and token counts run on the
    backend's own tokenizer thread (never asyncio's default pool, which models share)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.opens_reasoning = opens_reasoning(tokenizer)
        self._executor = ModelExecutor("llm-tokenizer")

    async def prompt_ids(
        self, messages: list[ChatMessage], max_tokens: int, context_length: int
    ) -> list[int]:
        """The prompt's token ids; refused when it leaves no room for `max_tokens`."""
        check_length(sum(len(m.content) for m in messages), context_length)
        check_unicode([m.content for m in messages])
        ids = await self._run(encode_prompt, self.tokenizer, messages)
        check_fits(len(ids), max_tokens, context_length)
        return ids

    async def text_ids(self, text: str, max_tokens: int, context_length: int) -> list[int]:
        """A raw prompt's token ids; refused when it leaves no room for `max_tokens`."""
        check_length(len(text), context_length)
        check_unicode([text])
        ids = await self._run(encode_text, self.tokenizer, text)
        check_fits(len(ids), max_tokens, context_length)
        return ids

    async def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        check_unicode(texts)
        return await self._run(count_tokens, self.tokenizer, list(texts))

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await self._executor.run(fn, *args)
        except ExecutorBusyError as exc:
            raise LLMBusyError(f"the tokenizer is overloaded: {exc}") from exc

    def close(self) -> None:
        self._executor.shutdown()
