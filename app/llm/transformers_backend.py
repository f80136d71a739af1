"""The `transformers` backend: HF `generate` with a streamer, on its own generation thread.

The baseline the embedded engine is measured against. One generation at a time (HF
generate has no continuous batching; others wait in the generation executor's bounded
queue); a stopping criterion checked every token makes closing a stream prompt.
`max_reasoning_tokens` is ignored: HF generate has no hook to end thinking, and this
backend is the unmodified baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Any

from app.executor import ExecutorBusyError, ModelExecutor
from app.llm.backend import (
    ChatMessage,
    FinishReason,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
)
from app.llm.chat_template import ChatTemplate, encode_prompt
from engine import EngineError, resolve_model, transformers_kwargs

_DONE = object()


class TransformersBackend(LLMBackend):
    name = "transformers"

    def __init__(self, model: str) -> None:
        import torch
        import transformers

        try:
            path = resolve_model(model)
        except EngineError as exc:
            raise LLMBackendError(str(exc)) from exc
        self.model = model
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
        self.hf_model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path), dtype=torch.float32, **transformers_kwargs(path)
        ).eval()
        self.context_length = int(getattr(self.hf_model.config, "max_position_embeddings", 2048))
        eos = self.hf_model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self._eos_ids = {int(t) for t in [*eos, self.tokenizer.eos_token_id] if t is not None}
        self.template = ChatTemplate(self.tokenizer)
        self._opens_reasoning = self.template.opens_reasoning
        self._generation = ModelExecutor("llm-generate")
        self._gpu_lock = threading.Lock()  # warmup runs outside the executor
        self._running = 0
        self._counters = {"requests": 0, "prompt_tokens": 0, "text_deltas": 0}

    def _generate(
        self,
        prompt: list[int],
        params: GenerationParams,
        stop: threading.Event,
        emit: Callable[[str], None],
    ) -> tuple[int, FinishReason]:
        """Generate (blocking), passing text to `emit` as it comes; returns the number
        of generated tokens and the finish reason."""
        import torch
        import transformers

        class _Stop(transformers.StoppingCriteria):
            def __call__(self, *args: Any, **kwargs: Any) -> bool:
                return stop.is_set()

        class _Emit(transformers.TextStreamer):
            def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
                if text:
                    emit(text)

        sample = params.temperature > 0
        with self._gpu_lock, torch.inference_mode():
            if stop.is_set():  # closed while it waited for its turn
                return 0, "abort"
            if params.seed is not None:
                torch.manual_seed(params.seed)
            input_ids = torch.tensor([prompt], dtype=torch.long)
            out = self.hf_model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=params.max_tokens,
                do_sample=sample,
                temperature=params.temperature if sample else None,
                top_p=params.top_p if sample else None,
                top_k=params.top_k if sample and params.top_k > 0 else None,
                stop_strings=list(params.stop) or None,
                tokenizer=self.tokenizer,
                streamer=_Emit(self.tokenizer, skip_prompt=True, skip_special_tokens=True),
                stopping_criteria=transformers.StoppingCriteriaList([_Stop()]),
                pad_token_id=self.tokenizer.eos_token_id,
            )
        generated = out[0, len(prompt) :].tolist()
        if stop.is_set():
            return len(generated), "abort"
        if len(generated) >= params.max_tokens and generated[-1] not in self._eos_ids:
            return len(generated), "length"
        return len(generated), "stop"

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        prompt = await self.template.prompt_ids(messages, params.max_tokens, self.context_length)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()

        def emit(text: str) -> None:  # on the generation thread
            try:
                loop.call_soon_threadsafe(queue.put_nowait, text)
            except RuntimeError:  # the event loop is gone: nobody listens any more
                stop.set()

        task = asyncio.ensure_future(
            self._generation.run(self._generate, prompt, params, stop, emit)
        )
        self._running += 1
        self._counters["requests"] += 1
        self._counters["prompt_tokens"] += len(prompt)

        def ended(_task: asyncio.Future[Any]) -> None:
            # Counted as running until the generation really ends, even if our caller
            # is cancelled again while waiting for it below.
            self._running -= 1
            queue.put_nowait(_DONE)  # after every text the generation emitted

        task.add_done_callback(ended)
        try:
            while (item := await queue.get()) is not _DONE:
                self._counters["text_deltas"] += 1
                yield LLMDelta(str(item))
            try:
                completion_tokens, reason = task.result()
            except ExecutorBusyError as exc:
                raise LLMBusyError(str(exc)) from exc
            except Exception as exc:
                raise LLMBackendError(f"generation failed: {type(exc).__name__}: {exc}") from exc
            yield LLMDelta(
                finish_reason=reason,
                prompt_tokens=len(prompt),
                completion_tokens=completion_tokens,
            )
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.shield(task)  # the generation has ended when this returns

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.template.count_tokens(texts)

    def warmup(self) -> None:
        prompt = encode_prompt(self.tokenizer, [ChatMessage("user", "Hi")])
        self._generate(prompt, GenerationParams(max_tokens=4), threading.Event(), lambda _t: None)

    def stats(self) -> dict[str, Any]:
        return {"num_running": self._running, **self._counters}

    async def close(self) -> None:
        self.template.close()
        self._generation.shutdown()
