"""Our AMX int8 kernel against our VNNI kernel: the same bits for every shape it takes
(run only where the CPU and the OS give AMX tiles; elsewhere it says why it is off)."""

from __future__ import annotations

import pytest
import torch

from engine.kernels.cpu_kernels import CpuKernels, pack_int8
from engine.layers import quantization as Q
from engine.layers.kernel_choice import amx_ready, fits

needs_amx = pytest.mark.skipif(
    not amx_ready(), reason="needs AMX tiles (amx_int8) and our C++ kernels"
)


@needs_amx
@pytest.mark.parametrize("shape", [(1536, 576), (576, 1536), (40, 64), (1000, 128), (16, 192)])
@pytest.mark.parametrize("rows", [1, 3, 15, 16, 17, 33, 130])
@pytest.mark.parametrize("with_bias", [False, True])
def test_int8_linear_amx_gives_the_vnni_kernels_bits(
    shape: tuple[int, int], rows: int, with_bias: bool
) -> None:
    """Rows past a tile's 16, an odd number of 16-output blocks, outputs not a multiple
    of 16, activations with a wide range: sum(hi * q) on tiles is the VNNI kernel's
    integer, then the same epilogue."""
    n, k = shape
    torch.manual_seed(rows * 1000 + n + with_bias)
    q, s = Q.quantize_int8(torch.randn(n, k) * 0.05)
    bias = torch.randn(n) if with_bias else None
    packed, rowsum, scales, padded_bias = pack_int8(q, s, bias)
    x = torch.randn(rows, k) * torch.rand(rows, 1) * 10
    x[0, 0] = -1e4  # an outlier: hi reaches -128
    ours = CpuKernels.k.int8_linear(x, packed, rowsum, scales, padded_bias, n)
    amx = CpuKernels.k.int8_linear_amx(x, packed, rowsum, scales, padded_bias, n)
    assert amx.shape == (rows, n) and torch.equal(amx, ours)


@needs_amx
def test_a_width_that_does_not_fill_a_tile_is_refused_by_the_kernel_and_not_chosen() -> None:
    q, s = Q.quantize_int8(torch.randn(32, 96))
    packed, rowsum, scales, _ = pack_int8(q, s, None)
    with pytest.raises(RuntimeError, match="multiple of 64"):
        CpuKernels.k.int8_linear_amx(torch.randn(4, 96), packed, rowsum, scales, None, 32)
    assert not fits("amx", (96, 32)) and fits("amx", (128, 32)) and fits("vnni", (96, 32))


@needs_amx
def test_zero_rows_give_an_empty_result() -> None:
    q, s = Q.quantize_int8(torch.randn(32, 64))
    packed, rowsum, scales, _ = pack_int8(q, s, None)
    y = CpuKernels.k.int8_linear_amx(torch.empty(0, 64), packed, rowsum, scales, None, 32)
    assert y.shape == (0, 32)
