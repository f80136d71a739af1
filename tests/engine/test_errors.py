"""Bad input raises one clear engine exception, and the engine keeps serving."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine import (
    LLM,
    ConfigError,
    EngineConfig,
    EngineError,
    InvalidRequestError,
    ModelLoadError,
    ModelNotFoundError,
    SamplingParams,
)


@pytest.fixture(scope="module")
def llm(tiny_llama: Path) -> LLM:
    return LLM(str(tiny_llama), max_model_len=64)


def still_serves(llm: LLM) -> None:
    out = llm.generate([[1, 2, 3]], SamplingParams(max_tokens=3, ignore_eos=True))[0]
    assert len(out.token_ids) == 3
    assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total


def test_prompt_longer_than_context(llm: LLM) -> None:
    with pytest.raises(InvalidRequestError, match="context"):
        llm.generate([[1, 2], [5] * 64], SamplingParams(max_tokens=4))
    assert llm.stats().num_waiting == 0  # the valid prompt of the batch was withdrawn too
    still_serves(llm)


@pytest.mark.parametrize("max_tokens", [0, -3])
def test_max_tokens_not_positive(max_tokens: int) -> None:
    with pytest.raises(InvalidRequestError, match="max_tokens"):
        SamplingParams(max_tokens=max_tokens)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(temperature=-1.0),
        dict(temperature=float("nan")),
        dict(temperature=float("inf")),
        dict(top_p=0.0),
        dict(top_p=float("nan")),
        dict(stop_token_ids=[-1]),
        dict(seed=2**64),  # torch's manual_seed overflowed inside the engine
    ],
)
def test_bad_sampling_params(kwargs: dict) -> None:
    with pytest.raises(InvalidRequestError):
        SamplingParams(**kwargs)


def test_bad_prompts(llm: LLM) -> None:
    with pytest.raises(InvalidRequestError, match="empty"):
        llm.add_request([])
    with pytest.raises(InvalidRequestError, match="token ids"):
        llm.add_request([1, 10_000])
    with pytest.raises(InvalidRequestError, match="tokenizer"):
        llm.add_request("text, but the tiny model has no tokenizer")
    llm.add_request([1, 2], request_id="dup")
    with pytest.raises(InvalidRequestError, match="already"):
        llm.add_request([1, 2], request_id="dup")
    llm.abort("dup")
    still_serves(llm)


@pytest.mark.parametrize("priority", [10**400, -(10**400), 2**31])
def test_out_of_range_priority_is_refused_and_leaves_nothing(llm: LLM, priority: int) -> None:
    """Bug: priority 10**400 overflowed the queue key after the request was registered:
    an error, and a request left in the engine's table for good."""
    with pytest.raises(InvalidRequestError, match="priority"):
        llm.add_request([1, 2], request_id="huge", priority=priority)
    assert "huge" not in llm.requests
    assert not llm.has_unfinished()
    still_serves(llm)


def test_bad_engine_config() -> None:
    with pytest.raises(ConfigError):
        EngineConfig(model="x", block_size=0)
    with pytest.raises(ConfigError):
        EngineConfig(model="x", dtype="float8")
    with pytest.raises(ConfigError):
        EngineConfig(model="x", max_num_seqs=8, max_num_batched_tokens=4)
    assert not issubclass(ConfigError, InvalidRequestError)  # a request never causes it
    assert issubclass(ConfigError, EngineError)


def test_config_errors_of_a_built_engine(llm: LLM, tiny_llama: Path) -> None:
    with pytest.raises(ConfigError, match="max_model_len"):
        LLM(str(tiny_llama), max_model_len=10_000)
    with pytest.raises(ConfigError, match="set_scheduling"):
        llm.set_scheduling(block_size=8)


def test_unknown_model_path(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError):
        LLM(str(tmp_path / "nope"))
    with pytest.raises(ModelNotFoundError):
        LLM("no-such-bundled-model")


def test_truncated_safetensors(tiny_llama: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny_llama, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match="truncated or corrupt"):
        LLM(str(broken))


def test_missing_weights(tiny_llama: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    shutil.copytree(tiny_llama, empty)
    (empty / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match=r"no \.safetensors"):
        LLM(str(empty))


def test_unsupported_architecture(tiny_llama: Path, tmp_path: Path) -> None:
    other = tmp_path / "gpt2"
    shutil.copytree(tiny_llama, other)
    config = json.loads((other / "config.json").read_text())
    config["model_type"] = "gpt2"
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="unsupported architecture"):
        LLM(str(other))
