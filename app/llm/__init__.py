"""The LLM layer: the backend interface (app/llm/backend.py), the chat template applied
once (chat_template.py), the backends (embedded.py, transformers_backend.py) and the
R1 reasoning splitter (reasoning.py). `create_backend` builds the configured backend."""

from __future__ import annotations

from app.llm.backend import (
    ChatMessage,
    FinishReason,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
)

__all__ = [
    "ChatMessage",
    "FinishReason",
    "GenerationParams",
    "LLMBackend",
    "LLMBackendError",
    "LLMBusyError",
    "LLMDelta",
    "create_backend",
]


def create_backend(kind: str, model: str, quantization: str = "int8") -> LLMBackend:
    """Build the configured backend (blocking: loads weights)."""
    if kind == "transformers":
        from app.llm.transformers_backend import TransformersBackend

        return TransformersBackend(model)
    if kind == "embedded":
        from app.llm.embedded import EmbeddedBackend

        return EmbeddedBackend(model, quantization=quantization)
    raise ValueError(f"unknown LLM backend {kind!r}; use 'embedded' or 'transformers'")
