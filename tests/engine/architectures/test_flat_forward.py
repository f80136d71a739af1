"""FlatForward: the flat loop of kernel calls computes exactly what the module tree does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, SamplingParams
from engine.architectures.flat_forward import linear_kernel
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.quantization import Int8Linear
from tests.engine.test_exactness import prompts

needs_kernels = pytest.mark.skipif(
    CpuKernels.lib() is None, reason=str(CpuKernels.unavailable_reason())
)


def _logits(llm: LLM, batch: list[list[int]]) -> tuple[list[list[int]], list[torch.Tensor]]:
    """Greedy tokens and every step's logits."""
    model = llm.model
    seen: list[torch.Tensor] = []
    head = model.compute_logits

    def record(hidden: torch.Tensor) -> torch.Tensor:
        out = head(hidden)
        seen.append(out.clone())
        return out

    model.compute_logits = record  # type: ignore[method-assign]
    outs = llm.generate(batch, SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True))
    return [o.token_ids for o in outs], seen


@needs_kernels
@pytest.mark.parametrize("quantization", ["none", "int8", "int4"])
def test_the_flat_pass_is_bit_identical_to_the_module_path(
    tiny_factory: Callable[..., tuple[Path, Any]], quantization: str
) -> None:
    """Chunked prefills beside decodes (8-token steps), so both attention branches run."""
    path, hf = tiny_factory("qwen2-gqa-bias")
    batch = prompts(hf.config.vocab_size, (3, 17, 40, 9, 25))
    settings: dict[str, Any] = dict(
        dtype="float32",
        quantization=quantization,
        int8_kernel="vnni",
        max_num_batched_tokens=8,
        max_num_seqs=4,
        block_size=4,
        quantization_group_size=32,
    )
    flat = LLM(str(path), **settings)
    modules = LLM(str(path), **settings)
    assert flat.model.flat is not None
    kernel = {"none": None, "int8": CpuKernels.k.int8_linear, "int4": CpuKernels.k.int4_linear}
    if kernel[quantization] is not None:  # the projections' own kernels, no module between
        assert all(layer.qkv[0] is kernel[quantization] for layer in flat.model.flat.layers)
    modules.model.flat = None
    tokens, logits = _logits(flat, batch)
    expected_tokens, expected_logits = _logits(modules, batch)
    assert tokens == expected_tokens
    assert len(logits) == len(expected_logits) > 6
    assert all(torch.equal(a, b) for a, b in zip(logits, expected_logits, strict=True))


def test_no_flat_pass_without_the_cpp_kernels(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    path, _ = tiny_factory("qwen2-gqa-bias")
    CpuKernels.enabled = False
    try:
        llm = LLM(str(path), dtype="float32", quantization="int8")
    finally:
        CpuKernels.enabled = True
    assert llm.model.flat is None
    assert not llm.model.uses_cpu_kernels


@needs_kernels
def test_a_projection_with_a_path_per_row_class_is_dispatched_by_its_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """VNNI for a decode's rows, AMX for a prompt's: the flat pass calls the kernel the
    module itself would (the AMX one is stood in for where this CPU has no tiles)."""
    torch.manual_seed(3)
    module = Int8Linear.from_float(torch.randn(48, 64) * 0.05)
    module.prepare()
    module.take_paths(("vnni", "vnni", "amx", "amx"))
    called: list[int] = []

    def amx(x: torch.Tensor, *args: Any) -> torch.Tensor:
        called.append(x.shape[0])
        return CpuKernels.k.int8_linear(x, *args)

    monkeypatch.setattr(CpuKernels.k, "int8_linear_amx", amx)
    fn, args = linear_kernel(module)
    for rows in (1, 8, 9, 70):
        x = torch.randn(rows, 64)
        assert torch.equal(fn(x, *args), module(x))
    assert called == [9, 9, 70, 70]  # the flat call and the module's, for rows past 8
