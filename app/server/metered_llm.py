"""MeteredLLM: a backend whose streams pass through `LLMMetrics` (llm_metrics.py) on the
way out, so every backend, the remote one included, is measured the same way."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any

from app.llm import ChatMessage, GenerationParams, LLMBackend, LLMDelta
from app.server.llm_metrics import LLMMetrics


class MeteredLLM(LLMBackend):
    """A backend seen through `LLMMetrics`; everything else is the wrapped backend's.
    Its series are labelled `model_name` (None: the server's model, as settings name it)."""

    def __init__(
        self, inner: LLMBackend, metrics: LLMMetrics, model_name: str | None = None
    ) -> None:
        self.inner = inner
        self.metrics = metrics
        self.model_name = model_name
        self.name = inner.name
        self.model = inner.model

    @property  # type: ignore[override]
    def context_length(self) -> int:  # the remote backend learns it after start
        return self.inner.context_length

    @context_length.setter
    def context_length(self, value: int) -> None:
        self.inner.context_length = value

    def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        stream = self.inner.stream_chat(messages, params, request_id)
        return self.metrics.meter(stream, self.model_name)

    def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        stream = _lazy(lambda: self.inner.stream_text(prompt, params, request_id))
        return self.metrics.meter(stream, self.model_name)

    @property
    def primes(self) -> bool:
        return self.inner.primes

    async def prime(self, messages: list[ChatMessage], params: GenerationParams) -> None:
        await self.inner.prime(messages, params)

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.inner.count_tokens(texts)

    def warmup(self) -> None:
        self.inner.warmup()

    def prompt_opens_reasoning(self, messages: list[ChatMessage]) -> bool:
        return self.inner.prompt_opens_reasoning(messages)

    async def health(self) -> str | None:
        return await self.inner.health()

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    async def close(self) -> None:
        """Nothing: the wrapped backend belongs to the components, which close it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def _lazy(
    make: Callable[[], AsyncGenerator[LLMDelta, None]],
) -> AsyncGenerator[LLMDelta, None]:
    """A stream whose creation errors (a backend without raw prompts) surface on the
    first `anext`, as the other refusals do."""
    async with contextlib.aclosing(make()) as stream:
        async for delta in stream:
            yield delta
