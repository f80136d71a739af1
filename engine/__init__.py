"""r1voice's LLM engine: paged KV cache, continuous batching, streaming.

    from engine import LLM, AsyncLLM, SamplingParams

    llm = LLM("smollm2-135m-instruct", max_num_seqs=32)  # EngineConfig fields as keywords
    outs = llm.generate(prompts, SamplingParams(max_tokens=64, temperature=0.0))
    outs[0].token_ids, outs[0].text

    allm = AsyncLLM("path/to/hf-dir")  # the engine loop runs on its own thread
    async for delta in allm.stream(prompt, params, request_id="r1", priority=0):
        delta.text  # whole characters; delta.token_ids, delta.finished, delta.finish_reason
    await allm.abort("r1")  # frees the request's KV blocks before it returns

Files, one concept each: config (EngineConfig), sampling_params, sequence,
prompt_check, block_manager (paged KV pool + prefix cache), scheduler (+
scheduler_output, cache_aware_pick, step_budget, step_cost_model: steps bounded in
time), model_runner, sampler, detokenizer, output_processor, llm_engine (step),
step_clock, engine_stats, backpressure, model_loader, llm, async_llm (+ request_stream);
models/ and layers/ hold our own Llama/Qwen2 forward pass; cpu_kernels builds and
loads the C++ kernels in kernels/ (AVX-512 VNNI int8/int4 linears, fused layer ops).
"""

from engine.async_llm import AsyncLLM
from engine.config import EngineConfig
from engine.errors import (
    ConfigError,
    EngineBusyError,
    EngineError,
    InvalidRequestError,
    ModelLoadError,
    ModelNotFoundError,
)
from engine.llm import LLM
from engine.outputs import EngineStats, RequestOutput, StreamDelta
from engine.sampling_params import SamplingParams

__all__ = [
    "LLM",
    "AsyncLLM",
    "ConfigError",
    "EngineBusyError",
    "EngineConfig",
    "EngineError",
    "EngineStats",
    "InvalidRequestError",
    "ModelLoadError",
    "ModelNotFoundError",
    "RequestOutput",
    "SamplingParams",
    "StreamDelta",
]
