"""ModelRunner's KV cache: its dtype (kv_cache_dtype) and what a float16 cache costs; the
attention kernel's bf16 products (attention_bf16)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, SamplingParams, model_runner
from engine.errors import ConfigError
from engine.kernels.cpu_kernels import BF16_SCORES, BF16_TILES, BF16_VALUES, CpuKernels, cpu_flags
from tests.engine.test_exactness import prompts

needs_kernels = pytest.mark.skipif(
    CpuKernels.lib() is None, reason=str(CpuKernels.unavailable_reason())
)
needs_bf16 = pytest.mark.skipif(
    CpuKernels.lib() is None or "avx512_bf16" not in cpu_flags(),
    reason="needs the C++ kernels and AVX512_BF16",
)
TILES_HERE = CpuKernels.lib() is not None and bool(CpuKernels.lib().amx_bf16_ready())
BOTH = BF16_VALUES | BF16_SCORES
MEMORY = 64 * 1024  # bytes: fewer blocks than 4 sequences at full length (the cap)


def _engine(path: Path, **settings: Any) -> LLM:
    return LLM(str(path), dtype="float32", kv_cache_memory=MEMORY, max_num_seqs=4, **settings)


@needs_kernels
def test_auto_is_float16_for_quantized_weights_on_the_kernels(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    path, _ = tiny_factory("qwen2-gqa-bias")
    int8 = _engine(path, quantization="int8")
    exact = _engine(path, quantization="none")
    assert int8.model_runner.kv_cache.dtype == torch.float16
    assert exact.model_runner.kv_cache.dtype == torch.float32  # exact against transformers
    # the same bytes hold twice the tokens
    assert int8.model_runner.num_blocks == 2 * exact.model_runner.num_blocks


@pytest.mark.parametrize("kernels", [True, False])
def test_a_float16_cache_gives_the_logits_of_a_float32_one_within_rounding(
    tiny_factory: Callable[..., tuple[Path, Any]], kernels: bool
) -> None:
    """On the C++ kernels and on the torch ones: prefill chunks read the cache too."""
    if kernels and CpuKernels.lib() is None:
        pytest.skip(str(CpuKernels.unavailable_reason()))
    path, hf = tiny_factory("llama-gqa-tied")
    batch = prompts(hf.config.vocab_size, (3, 17, 40))
    logits: dict[str, list[torch.Tensor]] = {}
    CpuKernels.enabled = kernels
    try:
        for dtype in ("float32", "float16"):
            llm = _engine(path, quantization="int8", kv_cache_dtype=dtype, max_num_batched_tokens=8)
            assert llm.model_runner.kv_cache.dtype == getattr(torch, dtype)
            seen = logits.setdefault(dtype, [])
            head = llm.model.compute_logits

            def record(hidden: torch.Tensor, head: Any = head, seen: list = seen) -> torch.Tensor:
                out = head(hidden)
                seen.append(out)
                return out

            llm.model.compute_logits = record  # type: ignore[method-assign]
            params = SamplingParams(max_tokens=5, temperature=0.0, ignore_eos=True)
            llm.generate(batch, params)
            assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total
    finally:
        CpuKernels.enabled = True
    assert len(logits["float16"]) == len(logits["float32"]) > 5
    for a, b in zip(logits["float16"], logits["float32"], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-2 * float(b.abs().max()))


@needs_kernels
def test_bfloat16_on_the_kernels_is_refused_with_what_to_use(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    path, _ = tiny_factory("qwen2-gqa-bias")
    with pytest.raises(ConfigError, match="use 'float16'"):
        _engine(path, quantization="int8", kv_cache_dtype="bfloat16")


def test_an_unknown_cache_dtype_is_refused_at_once() -> None:
    with pytest.raises(ConfigError, match="kv_cache_dtype must be one of"):
        LLM("smollm2-135m-instruct", kv_cache_dtype="fp8")


def test_scoring_reads_the_engines_own_cache_dtype(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    """Perplexity measures what serving computes: a float16 cache's rounding included."""
    from engine.loading.scoring import score

    path, hf = tiny_factory("llama-gqa-tied")
    ids = prompts(hf.config.vocab_size, (60,))[0]
    logps = {
        dtype: score(_engine(path, quantization="int8", kv_cache_dtype=dtype), ids)
        for dtype in ("float32", "float16")
    }
    assert logps["float16"] != logps["float32"]
    assert logps["float16"] == pytest.approx(logps["float32"], abs=1e-2)


@needs_bf16
def test_auto_takes_bf16_products_only_for_quantized_weights_it_can_pair(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    pairs, _ = tiny_factory("qwen2-gqa-bias", hidden_size=128)  # head_dim 32
    odd, _ = tiny_factory("qwen2-gqa-bias")  # head_dim 16
    auto = _engine(pairs, quantization="int8").model_runner
    assert auto.attention_bf16 == (BOTH | BF16_TILES if TILES_HERE else BOTH)
    assert all(a.bf16 == auto.attention_bf16 for a in auto.attn_layers)
    assert _engine(pairs, quantization="none").model_runner.attention_bf16 == 0  # exact
    assert _engine(odd, quantization="int8").model_runner.attention_bf16 == 0
    values = _engine(pairs, quantization="int8", attention_bf16="values").model_runner
    assert values.attention_bf16 == BF16_VALUES
    assert all(a.bf16 == BF16_VALUES for a in values.attn_layers)
    assert (
        _engine(pairs, quantization="int8", attention_bf16="all").model_runner.attention_bf16
        == BOTH
    )


@needs_bf16
def test_auto_leaves_the_tiles_where_the_cpu_grants_none(
    tiny_factory: Callable[..., tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs, _ = tiny_factory("qwen2-gqa-bias", hidden_size=128)
    monkeypatch.setattr(model_runner.ModelRunner, "_no_tiles", staticmethod(lambda _d: "no tiles"))
    assert _engine(pairs, quantization="int8").model_runner.attention_bf16 == BOTH
    with pytest.raises(ConfigError, match="attention_bf16='amx': no tiles; use 'auto' or 'all'"):
        _engine(pairs, quantization="int8", attention_bf16="amx")


@needs_kernels
def test_bf16_attention_that_cannot_run_is_refused_saying_why(
    tiny_factory: Callable[..., tuple[Path, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    odd, _ = tiny_factory("qwen2-gqa-bias")
    with pytest.raises(ConfigError, match="head_dim 16 is not a multiple of 32; use 'auto'"):
        _engine(odd, quantization="int8", attention_bf16="values")
    pairs, _ = tiny_factory("qwen2-gqa-bias", hidden_size=128)
    monkeypatch.setattr(model_runner, "cpu_flags", lambda: {"avx512f", "avx512_vnni"})
    with pytest.raises(ConfigError, match="the CPU lacks AVX512_BF16"):
        _engine(pairs, quantization="int8", attention_bf16="all")
    assert _engine(pairs, quantization="int8").model_runner.attention_bf16 == 0  # auto: none
    with pytest.raises(ConfigError, match="attention_bf16 must be one of"):
        _engine(pairs, attention_bf16="fp8")


@needs_bf16
def test_scoring_runs_the_engines_own_attention_products(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    """Perplexity measures what serving computes: bf16 products change the logprobs,
    within their rounding."""
    from engine.loading.scoring import score

    path, hf = tiny_factory("qwen2-gqa-bias", hidden_size=128)
    ids = prompts(hf.config.vocab_size, (60,))[0]
    logps = {
        mode: score(_engine(path, quantization="int8", attention_bf16=mode), ids)
        for mode in ("none", "all", *(["amx"] if TILES_HERE else []))
    }
    assert logps["all"] != logps["none"]
    # random weights with large q/k biases: rounding q and k moves a logprob up to ~0.1
    assert logps["all"] == pytest.approx(logps["none"], abs=0.25)
    if TILES_HERE:  # the same operands, summed in the tiles' order
        assert logps["amx"] == pytest.approx(logps["all"], abs=0.05)
