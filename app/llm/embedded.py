"""The `embedded` backend: our own engine (engine.AsyncLLM), continuous batching.

Every session's requests share one engine: they are batched together step by step,
equal conversation prefixes reuse their KV blocks, and closing a stream aborts the
request and frees its blocks at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from app.llm.base import ChatMessage, GenerationParams, LLMBackend, LLMBackendError, LLMBusyError
from engine import AsyncLLM, EngineBusyError, EngineError, SamplingParams


class EmbeddedBackend(LLMBackend):
    name = "embedded"

    def __init__(self, model: str, **engine_config: Any) -> None:
        try:
            self.llm = AsyncLLM(model, **engine_config)
        except EngineError as exc:
            raise LLMBackendError(str(exc)) from exc
        self.model = model
        self.tokenizer = self.llm.tokenizer
        self.context_length = self.llm.engine.max_model_len
        self._counters = {"requests": 0, "text_deltas": 0}

    def _prompt_ids(self, messages: list[ChatMessage]) -> list[int]:
        encoded: Any = self.tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            tokenize=True,
        )
        ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
        return [int(t) for t in ids]

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[str, None]:
        prompt = await asyncio.to_thread(self._prompt_ids, messages)
        if len(prompt) + params.max_tokens > self.context_length:
            raise LLMBackendError(
                f"conversation too long: {len(prompt)} prompt tokens + {params.max_tokens} "
                f"new tokens exceed the model context of {self.context_length}"
            )
        try:
            sampling = SamplingParams(
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k,
                stop=list(params.stop) or None,
                seed=params.seed,
            )
            stream = self.llm.stream(
                prompt,
                sampling,
                request_id=request_id or uuid.uuid4().hex,
                priority=params.priority,  # None: the engine's short-first default
            )
            self._counters["requests"] += 1
            # Closing this generator closes the engine stream, which aborts the request.
            async with contextlib.aclosing(stream):
                async for delta in stream:
                    if delta.text:
                        self._counters["text_deltas"] += 1
                        yield delta.text
        except EngineBusyError as exc:
            raise LLMBusyError(str(exc), exc.retry_after_s) from exc
        except EngineError as exc:
            raise LLMBackendError(str(exc)) from exc

    async def abort(self, request_id: str) -> None:
        await self.llm.abort(request_id)

    def warmup(self) -> None:
        self.llm.warmup_sync()

    def stats(self) -> dict[str, Any]:
        return {**self.llm.stats().asdict(), **self._counters}

    async def close(self) -> None:
        await self.llm.shutdown()
