"""ModelConfig: config.json read without transformers, value for value as AutoConfig."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import transformers

from engine.architectures import MODEL_REGISTRY
from engine.architectures.llama import rope_settings
from engine.loading.model_config import ModelConfig
from engine.loading.model_loader import eos_ids, load_config
from engine.loading.model_store import BUNDLED_LLMS, bundled_llm_dir, is_complete
from tests.engine.tiny_models import TINY_SHAPES


def _read_by_engine(config: Any, model_dir: Path) -> dict[str, Any]:
    """Every value the engine takes from a config."""
    cls = MODEL_REGISTRY[config.model_type]
    out = {key: getattr(config, key) for key in ("model_type", "hidden_size", "vocab_size")}
    for key in ("intermediate_size", "num_hidden_layers", "num_attention_heads"):
        out[key] = getattr(config, key)
    out["num_key_value_heads"] = config.num_key_value_heads
    out["head_dim"] = getattr(config, "head_dim", None) or (
        config.hidden_size // config.num_attention_heads
    )
    out["rms_norm_eps"] = config.rms_norm_eps
    out["max_position_embeddings"] = config.max_position_embeddings
    out["tie_word_embeddings"] = bool(getattr(config, "tie_word_embeddings", False))
    out["rope"] = rope_settings(config)
    out["biases"] = cls.bias_settings(config)
    out["eos"] = eos_ids(model_dir, config)
    return out


def _model_dirs(tiny_factory: Any) -> list[Path]:
    dirs = [tiny_factory(name)[0] for name in TINY_SHAPES]
    dirs += [bundled_llm_dir(n) for n in BUNDLED_LLMS if is_complete(bundled_llm_dir(n))]
    return dirs


def test_bundled_and_tiny_configs_read_as_transformers_reads_them(tiny_factory: Any) -> None:
    dirs = _model_dirs(tiny_factory)
    bundled = [d for d in dirs if d.parent.name == "models"]
    if not bundled:
        pytest.skip("no bundled LLM is prepared (r1voice models prepare)")
    for model_dir in dirs:
        ours = load_config(model_dir)
        if model_dir in bundled:  # read without transformers (a llama3 rope: with it)
            assert isinstance(ours, ModelConfig), model_dir
        theirs = transformers.AutoConfig.from_pretrained(str(model_dir))
        assert _read_by_engine(ours, model_dir) == _read_by_engine(theirs, model_dir), model_dir


@pytest.mark.parametrize(
    "change",
    [
        {"tie_word_embeddings": None},  # None: the key is removed
        {"eos_token_id": None},
        {"rope_parameters": None, "rope_theta": 500000.0},  # a 4.x config
        {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}},
    ],
)
def test_an_incomplete_or_scaled_config_goes_to_transformers(
    tiny_llama: Path, tmp_path: Path, change: dict[str, Any]
) -> None:
    raw = json.loads((tiny_llama / "config.json").read_text())
    assert ModelConfig.complete(raw)
    for key, value in change.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    assert not ModelConfig.complete(raw)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    config = load_config(tmp_path)
    assert isinstance(config, transformers.PretrainedConfig)
    assert _read_by_engine(config, tmp_path)["hidden_size"] == raw["hidden_size"]
