"""r1voice's LLM engine as a Triton Python-backend model, decoupled (streaming).

Each request streams `text_output` pieces (deltas) when `stream` is true, else one
response with the whole text; the final response carries the COMPLETE_FINAL flag. A
request Triton cancels (client gone) is aborted in the engine, which frees its KV blocks.
`finalize()` aborts what is left, frees every KV block and stops the engine thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils  # provided by Triton's Python backend

from engine import AsyncLLM, SamplingParams

INT_PARAMS = ("max_num_seqs", "max_num_batched_tokens", "max_model_len")


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException("r1voice_llm needs decoupled: true")
        engine_config: dict[str, Any] = {"quantization": params.get("quantization", "int8")}
        engine_config.update({k: int(params[k]) for k in INT_PARAMS if k in params})
        self.llm = AsyncLLM(params["model"], **engine_config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.live: set[asyncio.Future[Any]] = set()

    def execute(self, requests: list[Any]) -> None:
        """Decoupled: answers go through each request's response sender."""
        for request in requests:
            future = asyncio.run_coroutine_threadsafe(self._generate(request), self.loop)
            self.live.add(future)  # type: ignore[arg-type]
            future.add_done_callback(self.live.discard)  # type: ignore[arg-type]
        return None

    async def _generate(self, request: Any) -> None:
        sender = request.get_response_sender()
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        try:
            prompt = _scalar(request, "text_input", b"").decode("utf-8")
            stream = bool(_scalar(request, "stream", False))
            if not prompt:  # model_warmup's zero_data: the engine's own warm-up
                await asyncio.to_thread(self.llm.warmup_sync)
                sender.send(_response(""), flags=final)
                return
            sampling = SamplingParams(
                max_tokens=int(_scalar(request, "max_tokens", 128)),
                temperature=float(_scalar(request, "temperature", 0.0)),
            )
            text = ""
            async for delta in self.llm.stream(prompt, sampling, request_id=uuid.uuid4().hex):
                if request.is_cancelled():
                    break  # leaving the loop aborts the request and frees its blocks
                if stream and delta.text:
                    sender.send(_response(delta.text))
                text += delta.text
            sender.send(_response("" if stream else text), flags=final)
        except Exception as exc:  # every failure answers the request
            error = pb_utils.TritonError(f"{type(exc).__name__}: {exc}")
            sender.send(pb_utils.InferenceResponse(output_tensors=[], error=error), flags=final)

    def finalize(self) -> None:
        async def close() -> None:
            await self.llm.free_all()  # aborts live requests, returns every KV block
            await self.llm.shutdown()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _scalar(request: Any, name: str, default: Any) -> Any:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    value = tensor.as_numpy().reshape(-1)
    return value[0] if value.size else default


def _response(text: str) -> Any:
    out = pb_utils.Tensor("text_output", np.array([text.encode("utf-8")], dtype=np.object_))
    return pb_utils.InferenceResponse(output_tensors=[out])
