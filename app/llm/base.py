"""The LLM backend interface: the only way `app/` reaches a language model.

Implementations: `embedded` (our engine, app/llm/embedded.py), `transformers`
(HF generate, the baseline, app/llm/transformers_backend.py).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    priority: int | None = None  # lower runs first; None: the backend's default
    top_k: int = 0
    stop: tuple[str, ...] = ()


class LLMBackendError(Exception):
    """A request the backend refuses (bad input); the message says what was wrong."""

    code = "llm_error"


class LLMBusyError(LLMBackendError):
    """The backend is overloaded; retry after `retry_after_s`."""

    code = "server_busy"

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LLMBackend(abc.ABC):
    """Streams chat completions. One instance serves every session concurrently."""

    name: str
    model: str

    @abc.abstractmethod
    def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[str, None]:
        """Yield text deltas of the assistant's answer. Closing the iterator aborts the
        request and frees what it held."""

    @abc.abstractmethod
    async def abort(self, request_id: str) -> None:
        """Stop a request now (no-op when it already ended)."""

    @abc.abstractmethod
    def warmup(self) -> None:
        """Run a short generation so the first real request is not slow (blocking)."""

    def prompt_opens_reasoning(self, messages: list[ChatMessage]) -> bool:
        """Whether the chat template already opens a `<think>` block in the prompt (R1-Distill)."""
        cached = getattr(self, "_opens_reasoning", None)
        if cached is None:
            tokenizer = getattr(self, "tokenizer", None)
            cached = False
            if tokenizer is not None and getattr(tokenizer, "chat_template", None):
                prompt = tokenizer.apply_chat_template(
                    [{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False
                )
                cached = str(prompt).rstrip().endswith("<think>")
            self._opens_reasoning = cached
        return bool(cached)

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` (for usage reports)."""
        tokenizer = getattr(self, "tokenizer", None)
        return (
            len(tokenizer.encode(text, add_special_tokens=False))
            if tokenizer
            else len(text.split())
        )

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        tokenizer = getattr(self, "tokenizer", None)
        if tokenizer is None:
            return sum(self.count_tokens(m.content) for m in messages)
        ids: Any = tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            tokenize=True,
        )
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def stats(self) -> dict[str, Any]:
        """Counters for /metrics."""
        return {}

    async def close(self) -> None:  # noqa: B027  (optional hook)
        """Release threads and memory."""


def create_backend(kind: str, model: str, quantization: str = "int8") -> LLMBackend:
    """Build the configured backend (blocking: loads weights)."""
    if kind == "transformers":
        from app.llm.transformers_backend import TransformersBackend

        return TransformersBackend(model)
    if kind == "embedded":
        from app.llm.embedded import EmbeddedBackend

        return EmbeddedBackend(model, quantization=quantization)
    raise ValueError(f"unknown LLM backend {kind!r}; use 'embedded' or 'transformers'")
