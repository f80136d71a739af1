"""The `embedded` backend: our own engine (engine.AsyncLLM), continuous batching.

Every session's requests share one engine: they are batched together step by step,
equal conversation prefixes reuse their KV blocks, and closing a stream aborts the
request and frees its blocks at once.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import Any, cast

from app.llm.backend import (
    ChatMessage,
    FinishReason,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
    LLMTimes,
)
from app.llm.chat_template import ChatTemplate
from engine import AsyncLLM, EngineBusyError, EngineError, RequestTimes, SamplingParams

_FINISH_REASONS = ("stop", "length", "abort")
# A primed prompt (see LLMBackend.prime) queues this far behind its session's answers
# (the sessions' -1 makes it 1: not high priority, which may take the engine's reserve
# and preempt others).
PRIME_PRIORITY_OFFSET = 2
log = logging.getLogger("r1voice.llm")


class EmbeddedBackend(LLMBackend):
    name = "embedded"

    def __init__(self, model: str, **engine_config: Any) -> None:
        try:
            self.llm = AsyncLLM(model, **engine_config)
        except EngineError as exc:
            raise LLMBackendError(str(exc)) from exc
        self.model = model
        self.tokenizer = self.llm.tokenizer
        self.context_length = self.llm.max_model_len
        self.template = ChatTemplate(self.tokenizer)
        self._opens_reasoning = self.template.opens_reasoning
        self._counters = {"requests": 0, "text_deltas": 0}

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self._refuse_if_overloaded()
        prompt = await self.template.prompt_ids(messages, params.max_tokens, self.context_length)
        async with contextlib.aclosing(self._stream(prompt, params, request_id)) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self._refuse_if_overloaded()
        ids = await self.template.text_ids(prompt, params.max_tokens, self.context_length)
        async with contextlib.aclosing(self._stream(ids, params, request_id)) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def _stream(
        self, prompt: list[int], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        try:
            sampling = SamplingParams(
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k,
                stop=list(params.stop) or None,
                seed=params.seed,
                max_reasoning_tokens=params.max_reasoning_tokens,
                ignore_eos=params.ignore_eos,
            )
            stream = self.llm.stream(
                prompt,
                sampling,
                request_id=request_id or uuid.uuid4().hex,
                priority=params.priority,  # None: the engine's short-first default
            )
            self._counters["requests"] += 1
            completion_tokens = 0
            # Closing this generator closes the engine stream, which aborts the request.
            async with contextlib.aclosing(stream):
                async for delta in stream:
                    completion_tokens += len(delta.token_ids)
                    if delta.text:
                        self._counters["text_deltas"] += 1
                        yield LLMDelta(delta.text, reasoning_cut=delta.reasoning_cut)
                    if delta.finished:
                        yield LLMDelta(
                            finish_reason=_finish_reason(delta.finish_reason),
                            prompt_tokens=delta.num_prompt_tokens,
                            completion_tokens=completion_tokens,
                            cached_tokens=delta.num_cached_tokens,
                            reasoning_cut=delta.reasoning_cut,
                            times=_times(delta.times),
                        )
        except EngineBusyError as exc:
            raise LLMBusyError(str(exc), exc.retry_after_s) from exc
        except EngineError as exc:
            raise LLMBackendError(str(exc)) from exc

    @property
    def primes(self) -> bool:
        return True

    async def prime(self, messages: list[ChatMessage], params: GenerationParams) -> None:
        """A one-token request on the prompt: its full KV blocks stay in the prefix cache
        once it ends (the pool reuses the least recently freed first). Only while nothing
        waits for the engine: a prime never queues, nor counts as load or as a refusal."""
        if self.llm.stats().num_waiting:
            return
        priority = (params.priority or 0) + PRIME_PRIORITY_OFFSET
        try:
            prompt = await self.template.prompt_ids(
                messages, params.max_tokens, self.context_length
            )
            stream = self.llm.stream(
                prompt,
                SamplingParams(max_tokens=1, temperature=0.0),
                request_id=f"prime-{uuid.uuid4().hex}",
                priority=priority,
            )
            async with contextlib.aclosing(stream):
                async for _delta in stream:
                    pass
        except (EngineError, LLMBackendError) as exc:  # busy, or a prompt that does not fit
            log.debug("prime skipped: %s", exc)

    def _refuse_if_overloaded(self) -> None:
        """Refuse before tokenizing when the engine already refuses work: under load the
        tokenizer thread is busy too, and a refusal must come at once."""
        try:
            self.llm.check_load()
        except EngineBusyError as exc:
            raise LLMBusyError(str(exc), exc.retry_after_s) from exc

    def fatal_error(self) -> str | None:
        return self.llm.failure

    def give_way(self) -> contextlib.AbstractContextManager[None]:
        return self.llm.give_way.hold()

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.template.count_tokens(texts)

    def warmup(self) -> None:
        self.llm.warmup_sync()

    def stats(self) -> dict[str, Any]:
        return {**self.llm.stats().asdict(), **self._counters}

    async def close(self) -> None:
        self.template.close()
        await self.llm.shutdown()


def _finish_reason(reason: str | None) -> FinishReason:
    if reason not in _FINISH_REASONS:
        raise LLMBackendError(f"the engine ended the request with finish reason {reason!r}")
    return cast(FinishReason, reason)


def _times(times: RequestTimes | None) -> LLMTimes | None:
    if times is None:
        return None
    return LLMTimes(times.queue_s, times.prefill_s, times.decode_s)
