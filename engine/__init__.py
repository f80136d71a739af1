"""r1voice's LLM engine: paged KV cache, continuous batching, streaming."""

from engine.async_llm import AsyncLLM
from engine.config import EngineConfig
from engine.errors import (
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
