"""The `transformers` backend: HF `generate` with a streamer on a worker thread.

The baseline the embedded engine is measured against. One generation at a time (HF
generate has no continuous batching); a stopping criterion checked every token makes
abort prompt.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any

from app.llm.base import ChatMessage, GenerationParams, LLMBackend, LLMBackendError
from engine import EngineError
from engine.model_store import resolve_model

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
            str(path), dtype=torch.float32
        ).eval()
        self.context_length = int(getattr(self.hf_model.config, "max_position_embeddings", 2048))
        self._gpu_lock = threading.Lock()
        self._stops: dict[str, threading.Event] = {}
        self._counters = {"requests": 0, "prompt_tokens": 0, "text_deltas": 0}

    def _prompt_ids(self, messages: list[ChatMessage]) -> Any:
        encoded: Any = self.tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )
        return encoded["input_ids"]

    def _generate(
        self,
        input_ids: Any,
        params: GenerationParams,
        stop: threading.Event,
        emit: Any,
    ) -> None:
        import torch
        import transformers

        class _Stop(transformers.StoppingCriteria):
            def __call__(self, *args: Any, **kwargs: Any) -> bool:
                return stop.is_set()

        streamer = transformers.TextIteratorStreamer(self.tokenizer, skip_prompt=True)

        def run() -> None:
            sample = params.temperature > 0
            if params.seed is not None:
                torch.manual_seed(params.seed)
            with self._gpu_lock, torch.inference_mode():
                self.hf_model.generate(
                    input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=params.max_tokens,
                    do_sample=sample,
                    temperature=params.temperature if sample else None,
                    top_p=params.top_p if sample else None,
                    top_k=params.top_k if sample and params.top_k > 0 else None,
                    stop_strings=list(params.stop) or None,
                    tokenizer=self.tokenizer,
                    streamer=streamer,
                    stopping_criteria=transformers.StoppingCriteriaList([_Stop()]),
                    pad_token_id=self.tokenizer.eos_token_id,
                )

        worker = threading.Thread(target=run, daemon=True, name="hf-generate")
        worker.start()
        try:
            for text in streamer:
                if stop.is_set():
                    break
                emit(text.replace(self.tokenizer.eos_token or "\0", ""))
        finally:
            stop.set()
            worker.join()

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[str, None]:
        input_ids = await asyncio.to_thread(self._prompt_ids, messages)
        if input_ids.shape[1] + params.max_tokens > self.context_length:
            raise LLMBackendError(
                f"conversation too long: {input_ids.shape[1]} prompt tokens + "
                f"{params.max_tokens} new tokens exceed the model context of {self.context_length}"
            )
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()
        self._stops[request_id] = stop
        self._counters["requests"] += 1
        self._counters["prompt_tokens"] += int(input_ids.shape[1])

        def emit(text: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, text)

        async def produce() -> None:
            try:
                await asyncio.to_thread(self._generate, input_ids, params, stop, emit)
            finally:
                queue.put_nowait(_DONE)

        task = asyncio.create_task(produce())
        # Counted as running until the worker thread really ends, even if our caller is
        # cancelled again while waiting for it below.
        task.add_done_callback(lambda _task: self._stops.pop(request_id, None))
        try:
            while (item := await queue.get()) is not _DONE:
                if item:
                    self._counters["text_deltas"] += 1
                    yield str(item)
        finally:
            stop.set()
            await asyncio.shield(task)  # the worker thread has ended when this returns

    async def abort(self, request_id: str) -> None:
        stop = self._stops.get(request_id)
        if stop is not None:
            stop.set()

    def warmup(self) -> None:
        stop = threading.Event()
        ids = self._prompt_ids([ChatMessage("user", "Hi")])
        self._generate(ids, GenerationParams(max_tokens=4), stop, lambda _t: None)

    def stats(self) -> dict[str, Any]:
        return {"num_running": len(self._stops), **self._counters}
