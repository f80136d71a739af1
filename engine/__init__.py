"""r1voice's LLM engine: paged KV cache, continuous batching, streaming."""

from engine.errors import (
    EngineBusyError,
    EngineError,
    InvalidRequestError,
    ModelLoadError,
    ModelNotFoundError,
)

__all__ = [
    "EngineBusyError",
    "EngineError",
    "InvalidRequestError",
    "ModelLoadError",
    "ModelNotFoundError",
]
