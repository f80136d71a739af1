"""ModelConfig: a model directory's config.json read as it is, without transformers."""

from __future__ import annotations

from typing import Any

# What the engine reads from a config (engine.architectures, the loader) for which
# transformers' config classes would fill in a default of their own when it is absent.
# A config.json that names all of them needs no transformers to be read exactly.
REQUIRED = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "rms_norm_eps",
    "max_position_embeddings",
    "tie_word_embeddings",
    "eos_token_id",
)
LLAMA_REQUIRED = ("attention_bias", "mlp_bias")  # Qwen2's biases are fixed by its class


class ModelConfig:
    """The attributes of a config.json, when ``ModelConfig.complete(raw)``: every value
    the engine reads is written in the file (transformers 5 writes them all), and the
    rotary embedding is the plain one, in transformers 5's ``rope_parameters`` (a 4.x
    ``rope_theta`` or ``rope_scaling``, which transformers rewrites, is left to it). Importing transformers and resolving
    its AutoConfig cost a cold start over a second; the loader falls back to it for any
    other config."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = dict(raw)
        for key, value in raw.items():
            setattr(self, key, value)

    @staticmethod
    def complete(raw: dict[str, Any]) -> bool:
        required = REQUIRED + (LLAMA_REQUIRED if raw.get("model_type") == "llama" else ())
        if any(key not in raw for key in required):
            return False
        if raw.get("rope_scaling") is not None:
            return False
        params = raw.get("rope_parameters")  # transformers 5's (a 4.x rope_theta: fall back)
        return (
            isinstance(params, dict)
            and params.get("rope_type", "default") == "default"
            and isinstance(params.get("rope_theta"), int | float)
            and set(params) <= {"rope_type", "rope_theta"}
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self._raw)

    def __repr__(self) -> str:
        return f"ModelConfig({self._raw.get('model_type')!r}, {len(self._raw)} keys)"
