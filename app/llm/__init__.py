"""The LLM layer: the backend interface (app/llm/backend.py), the chat template applied
once (chat_template.py), the backends (embedded.py, transformers_backend.py, remote.py) and the
R1 reasoning splitter (reasoning.py). `create_backend` builds the configured backend."""

from __future__ import annotations

from typing import Any

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


def create_backend(
    kind: str,
    model: str,
    quantization: str | None = None,
    max_queue_delay_s: float = 0.0,
    clustering: bool = False,
    *,
    engine: dict[str, Any] | None = None,
    **remote: Any,
) -> LLMBackend:
    """Build the configured backend (blocking: loads weights). `remote` holds the remote
    backend's options (url, api_key, timeouts, ...: see RemoteBackend); others ignore it.
    `max_queue_delay_s` is our engine's overload refusal (engine.scheduling.backpressure);
    `clustering` its prompt clustering for KV retention (engine.scheduling.clustering);
    `engine` more of its EngineConfig fields (speculative decoding). `quantization` None:
    the model's own default (engine.default_quantization)."""
    if kind == "remote":
        from app.llm.remote import RemoteBackend

        return RemoteBackend(model, **remote)
    if kind == "transformers":
        from app.llm.transformers_backend import TransformersBackend

        return TransformersBackend(model)
    if kind == "embedded":
        from app.llm.embedded import EmbeddedBackend
        from engine import default_quantization

        return EmbeddedBackend(
            model,
            quantization=quantization or default_quantization(model),
            max_queue_delay_s=max_queue_delay_s,
            semantic_clustering=clustering,
            **(engine or {}),
        )
    raise ValueError(f"unknown LLM backend {kind!r}; use 'embedded', 'transformers' or 'remote'")
