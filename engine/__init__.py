"""r1voice's LLM engine: paged KV cache, continuous batching, streaming.

    from engine import LLM, AsyncLLM, SamplingParams

    llm = LLM("smollm2-135m-instruct", max_num_seqs=32)  # EngineConfig fields as keywords
    outs = llm.generate(prompts, SamplingParams(max_tokens=64, temperature=0.0))
    outs[0].token_ids, outs[0].text

    allm = AsyncLLM("path/to/hf-dir")  # the engine loop runs on its own thread
    async for delta in allm.stream(prompt, params, request_id="r1", priority=0):
        delta.text  # whole characters; delta.token_ids, delta.finished, delta.finish_reason
    await allm.abort("r1")  # frees the request's KV blocks before it returns

Layout: this folder is the core, as in nano-vllm: a request becomes a Sequence,
the Scheduler picks each step's batch over the BlockManager's paged KV pool, the
ModelRunner runs it, the OutputProcessor turns tokens into text, and LLMEngine.step
ties them together (AsyncLLM runs it on its own thread). Around the core:

    scheduling/  policy: queue order and reserve, cache-aware picks, step-time
                 budgets, prompt clustering, backpressure
    stats/       accounting: where the time goes, the counters stats() returns
    loading/     a model name -> weights on disk -> our (quantized) model
    architectures/, layers/  our own Llama/Qwen2 forward pass (quantized linears
                 included)
    kernels/     our C++ CPU kernels and the code that builds and loads them

The core imports these folders, and none of them imports the core's engine,
scheduler or runner. This module is the engine's one front door: app/ and bench/ import
from `engine` only (tests/test_layers.py holds them to it), so what they use is listed
here: the engine itself, the bundled LLMs' store, the cache paths and thread naming, and
for the benchmarks the kernels, the quantized weights and perplexity.
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
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.quantization import dequantize_int4, quantize_int4
from engine.llm import LLM
from engine.loading.bundled_gguf import default_quantization
from engine.loading.gguf_file import gguf_decode_weight_bytes
from engine.loading.model_loader import prepare_bundled_llm
from engine.loading.model_store import (
    BUNDLED_LLMS,
    COMPLETE_MARKER,
    DEFAULT_LLM,
    bundled_gguf_path,
    bundled_llm_dir,
    gguf_source,
    is_complete,
    resolve_model,
    transformers_kwargs,
)
from engine.loading.quantized_model import QuantCache, decode_weight_bytes, weight_bytes
from engine.loading.scoring import perplexity
from engine.outputs import EngineStats, RequestOutput, RequestTimes, StreamDelta
from engine.paths import cache_root, package_dir
from engine.sampling_params import SamplingParams
from engine.thread_name import os_thread_named, set_os_thread_name

__all__ = [
    "BUNDLED_LLMS",
    "COMPLETE_MARKER",
    "DEFAULT_LLM",
    "LLM",
    "AsyncLLM",
    "ConfigError",
    "CpuKernels",
    "EngineBusyError",
    "EngineConfig",
    "EngineError",
    "EngineStats",
    "InvalidRequestError",
    "ModelLoadError",
    "ModelNotFoundError",
    "QuantCache",
    "RequestOutput",
    "RequestTimes",
    "SamplingParams",
    "StreamDelta",
    "bundled_gguf_path",
    "bundled_llm_dir",
    "cache_root",
    "decode_weight_bytes",
    "default_quantization",
    "dequantize_int4",
    "gguf_decode_weight_bytes",
    "gguf_source",
    "is_complete",
    "os_thread_named",
    "package_dir",
    "perplexity",
    "prepare_bundled_llm",
    "quantize_int4",
    "resolve_model",
    "set_os_thread_name",
    "transformers_kwargs",
    "weight_bytes",
]
