"""A scripted LLM backend for tests: replays fixed text deltas, then a final delta."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from app.llm import ChatMessage, FinishReason, GenerationParams, LLMBackend, LLMDelta


class ScriptedLLM(LLMBackend):
    """Yields `texts` as deltas, then a final delta with `finish_reason` and token counts
    (`prompt_tokens`, completion tokens: one per text unless given). `final=False` ends
    the stream without a final delta (a broken backend). Counts tokens as words."""

    name = "scripted"
    model = "scripted"

    def __init__(
        self,
        texts: list[str],
        *,
        finish_reason: FinishReason = "stop",
        prompt_tokens: int = 10,
        completion_tokens: int | None = None,
        cached_tokens: int | None = None,
        opens_reasoning: bool = False,
        context_length: int = 2048,
        final: bool = True,
    ) -> None:
        self.texts = texts
        self.finish_reason: FinishReason = finish_reason
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = len(texts) if completion_tokens is None else completion_tokens
        self.cached_tokens = cached_tokens
        self._opens_reasoning = opens_reasoning
        self.context_length = context_length
        self.final = final
        self.requests: list[tuple[list[ChatMessage], GenerationParams]] = []

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.requests.append((messages, params))
        for text in self.texts:
            yield LLMDelta(text)
        if self.final:
            yield LLMDelta(
                finish_reason=self.finish_reason,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                cached_tokens=self.cached_tokens,
            )

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def warmup(self) -> None:
        return None
