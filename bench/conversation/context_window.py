"""ContextWindow: a served model whose conversation sees fewer tokens than it holds, so a
benchmark's call outgrows its context in a few dozen turns (the engine is unchanged)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

from app.llm import ChatMessage, GenerationParams, LLMBackend, LLMDelta


class ContextWindow(LLMBackend):
    def __init__(self, inner: LLMBackend, context_length: int) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.context_length = min(context_length, inner.context_length)
        self._opens_reasoning = inner._opens_reasoning

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        stream = self.inner.stream_chat(messages, params, request_id)
        async with contextlib.aclosing(stream):
            async for delta in stream:
                yield delta

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.inner.count_tokens(texts)

    def warmup(self) -> None:
        self.inner.warmup()
