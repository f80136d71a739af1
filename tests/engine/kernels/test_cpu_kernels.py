"""Our C++ CPU kernels against the torch code they replace (skipped where unavailable)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from engine.kernels import cpu_kernels
from engine.kernels.cpu_kernels import (
    BF16_SCORES,
    BF16_TILES,
    BF16_VALUES,
    CpuKernels,
    cpu_flags,
    pack_int4,
    pack_int8,
)
from engine.layers import quantization as Q
from engine.layers.int4_linear import Int4Linear
from engine.layers.rotary import RotaryEmbedding

ops = CpuKernels.ops()
needs_kernels = pytest.mark.skipif(ops is None, reason=str(CpuKernels.unavailable_reason()))
needs_bf16 = pytest.mark.skipif(
    ops is None or "avx512_bf16" not in cpu_flags(), reason="needs the kernels and AVX512_BF16"
)
TILES = BF16_VALUES | BF16_SCORES | BF16_TILES  # attention on AMX-BF16 tiles
needs_tiles = pytest.mark.skipif(
    ops is None or not ops.amx_bf16_ready(), reason="needs the kernels and AMX-BF16 tiles"
)


@needs_kernels
@pytest.mark.parametrize("shape", [(960, 576), (576, 1536), (37, 70), (5, 3), (16, 4)])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 9, 33])
def test_int8_linear_is_bit_exact_to_the_torch_path(shape: tuple[int, int], rows: int) -> None:
    """Same integer sums and float ops in the same order as quantization.int8_linear."""
    n, k = shape
    torch.manual_seed(rows * 1000 + n)
    q, s = Q.quantize_int8(torch.randn(n, k) * 0.05)
    bias = torch.randn(n)
    x = torch.randn(rows, k) * torch.rand(rows, 1) * 10  # rows of different ranges
    expected = Q.int8_linear(x, q.t().contiguous(), s) + bias
    packed, rowsum, scales, b = pack_int8(q, s, bias)
    assert torch.equal(ops.int8_linear(x, packed, rowsum, scales, b, n), expected)
    no_bias = ops.int8_linear(x, packed, rowsum, scales, None, n)
    assert torch.equal(no_bias, Q.int8_linear(x, q.t().contiguous(), s))


@needs_kernels
@pytest.mark.parametrize("shape", [(37, 70), (5, 3), (48, 64)])
def test_pack_int8_in_cpp_equals_the_torch_layout(shape: tuple[int, int]) -> None:
    n, k = shape
    q = torch.randint(-127, 128, shape, dtype=torch.int8)
    packed, rowsum = CpuKernels.k.pack_int8(q)
    np_, kp = -(-n // 16) * 16, -(-k // 4) * 4
    padded = torch.zeros(np_, kp, dtype=torch.int8)
    padded[:n, :k] = q
    assert torch.equal(packed, padded.view(np_ // 16, 16, kp // 4, 4).permute(0, 2, 1, 3))
    assert torch.equal(rowsum, padded.sum(dim=1, dtype=torch.int32))


@needs_kernels
def test_int8_linear_module_uses_the_kernel_and_releases_weights() -> None:
    w = torch.randn(48, 64) * 0.1
    lin = Q.Int8Linear.from_float(w)
    q, s = lin.weight.clone(), lin.scales.clone()
    lin.prepare()
    assert lin.vnni is not None and lin.weight.numel() == 0 and lin.weight_t is None
    x = torch.randn(3, 64)
    assert torch.equal(lin(x), Q.int8_linear(x, q.t().contiguous(), s))


@needs_kernels
@pytest.mark.parametrize("group_size", Q.INT4_GROUP_SIZES)
@pytest.mark.parametrize("rows", [1, 3, 4, 9])
def test_int4_linear_matches_the_dequantized_weights(group_size: int, rows: int) -> None:
    """Exact integer sums per group: the kernel computes the product of the 8-bit
    activations (quantize_activations) and the fp16 scales and mins, up to float rounding;
    against the unquantized activations, the error is theirs."""
    torch.manual_seed(group_size + rows)
    n, k = 40, 256
    q, s, m = Q.quantize_int4(torch.randn(n, k) * 0.05, group_size)
    bias = torch.randn(n)
    x = torch.randn(rows, k) * torch.linspace(0.1, 10, k)  # groups of different ranges
    s, m = s.half().float(), m.half().float()
    w = Q.dequantize_int4(q, s, m, group_size)
    xq, sx = Q.quantize_activations(x, group_size)
    x8 = (xq.float().reshape(rows, -1, group_size) * sx[..., None]).reshape(rows, k)
    packed, scales, mins, b = pack_int4(q, s, m, bias)
    y = ops.int4_linear(x, packed, scales, mins, b, n, group_size)
    ref8 = x8.double() @ w.double().t() + bias.double()
    assert ((y.double() - ref8).norm() / ref8.norm()).item() < 1e-6
    ref = x @ w.t() + bias
    assert 1e-5 < (y - ref).norm() / ref.norm() < 1e-2
    lin = Int4Linear.from_float(torch.randn(n, k), group_size, bias)
    lin.prepare()
    assert lin.kernel == "vnni_cpu" and lin.weight.numel() == 0


@needs_kernels
@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("n", [16 * 9 + 5, 16 * 3])  # block counts the 4- and 2-block paths split
def test_a_rows_product_has_the_same_bits_alone_and_in_any_batch(bits: int, n: int) -> None:
    """One row takes several output blocks per pass (the broadcasts shared), more rows
    other tiles: each output's integer sums and float ops, so its bits, are the same."""
    torch.manual_seed(n + bits)
    k, g = 128, 32
    w, bias = torch.randn(n, k) * 0.05, torch.randn(n)
    x = torch.randn(9, k) * torch.rand(9, 1) * 10
    if bits == 4:
        packed = pack_int4(*Q.quantize_int4(w, g), bias)
        product = lambda rows: ops.int4_linear(rows, *packed, n, g)  # noqa: E731
    else:
        packed = pack_int8(*Q.quantize_int8(w), bias)
        product = lambda rows: ops.int8_linear(rows, *packed, n)  # noqa: E731
    alone = torch.cat([product(x[i : i + 1]) for i in range(9)])
    for rows in (2, 3, 4, 5, 9):
        assert torch.equal(product(x[:rows]), alone[:rows]), rows
    assert not torch.equal(alone[0], alone[1])  # distinct rows: the check compares something


@needs_kernels
def test_rms_norm_residual_and_silu_and_mul() -> None:
    torch.manual_seed(0)
    x, r, w = torch.randn(5, 70), torch.randn(5, 70), torch.rand(70)
    normed, total = ops.rms_norm_residual(x, r, w, 1e-5)
    assert torch.equal(total, x + r)
    ref = w * ((x + r) * torch.rsqrt((x + r).pow(2).mean(-1, keepdim=True) + 1e-5))
    torch.testing.assert_close(normed, ref, rtol=1e-6, atol=1e-6)
    normed, total = ops.rms_norm_residual(x, None, w, 1e-5)
    assert torch.equal(total, x)
    gate_up = torch.randn(3, 2 * 40) * 4
    gate, up = gate_up.chunk(2, dim=-1)
    torch.testing.assert_close(ops.silu_and_mul(gate_up), F.silu(gate) * up, rtol=1e-6, atol=1e-6)


@needs_kernels
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16])
def test_rope_and_cache_write_the_rotated_keys_and_values(cache_dtype: torch.dtype) -> None:
    """A float16 cache holds the fp32 results rounded as torch rounds them (.half())."""
    h, kvh, d = 4, 2, 32
    rotary = RotaryEmbedding(d, 256, 10000.0, {})
    rotary.build(torch.device("cpu"), torch.float32)
    qkv = torch.randn(4, (h + 2 * kvh) * d) * 30  # some values need rounding in fp16
    positions, slots = torch.tensor([3, 7, 100, 5]), torch.tensor([3, 40, 77, 159])
    k_cache = torch.zeros(10, 16, kvh, d, dtype=cache_dtype)
    v_cache = torch.zeros(10, 16, kvh, d, dtype=cache_dtype)
    q = ops.rope_and_cache(
        qkv, rotary.cos[positions], rotary.sin[positions], k_cache, v_cache, slots, h, kvh, d
    )
    cos, sin = rotary.lookup(positions)
    qk = RotaryEmbedding.rotate(qkv[:, : (h + kvh) * d].view(4, -1, d), cos, sin)
    values = qkv[:, (h + kvh) * d :].view(4, kvh, d)
    assert torch.equal(q, qk[:, :h])
    assert torch.equal(k_cache.view(-1, kvh, d)[slots], qk[:, h:].to(cache_dtype))
    assert torch.equal(v_cache.view(-1, kvh, d)[slots], values.to(cache_dtype))
    untouched = torch.ones(160, dtype=torch.bool)
    untouched[slots] = False
    assert not k_cache.view(160, -1)[untouched].any()


def _sdpa_row(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, table: torch.Tensor, length: int
) -> torch.Tensor:
    """SDPA of one query row q [h, d] over the first ``length`` cached tokens of the
    blocks in ``table``, the cache widened to fp32 -> [h, d]."""
    h, kvh, d = q.shape[0], k_cache.shape[2], q.shape[1]
    keys = k_cache[table].reshape(-1, kvh, d)[:length].repeat_interleave(h // kvh, 1).float()
    vals = v_cache[table].reshape(-1, kvh, d)[:length].repeat_interleave(h // kvh, 1).float()
    return F.scaled_dot_product_attention(q[:, None], keys.transpose(0, 1), vals.transpose(0, 1))[
        :, 0
    ]


@needs_kernels
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize(
    "h, kvh, d",
    # head_dim 32/64/128 have compiled-in sizes (128 with a leftover query head when
    # g = 3); 16 and 48 take the generic loop
    [(6, 2, 32), (9, 3, 64), (4, 1, 128), (6, 2, 128), (4, 2, 16), (2, 1, 48)],
)
def test_paged_decode_attention_matches_sdpa(
    cache_dtype: torch.dtype, h: int, kvh: int, d: int
) -> None:
    """Over a float16 cache: SDPA over the same (widened) values."""
    torch.manual_seed(3)
    bs = 4
    k_cache = torch.randn(12, bs, kvh, d).to(cache_dtype)
    v_cache = torch.randn(12, bs, kvh, d).to(cache_dtype)
    # padded with 0; the last sequence spans ten blocks
    rows = [[5], [1, 7, 2, 9], [3, 11, 4], [10, 2, 6, 8, 1, 3, 5, 7, 9, 11]]
    tables = torch.tensor([r + [0] * (10 - len(r)) for r in rows])
    lens = torch.tensor([3, 16, 9, 37])
    q = torch.randn(4, h, d)
    out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5)
    for i in range(4):
        ref = _sdpa_row(q[i], k_cache, v_cache, tables[i], int(lens[i]))
        torch.testing.assert_close(out[i].view(h, d), ref, rtol=1e-5, atol=1e-5)


def test_disabled_kernels_fall_back_cleanly() -> None:
    """R1VOICE_CPU_KERNELS=0 (as a missing compiler or CPU feature): no kernels, and
    the engine still runs on its torch path."""
    code = (
        "from engine.kernels.cpu_kernels import CpuKernels; from engine.layers.quantization import Int8Linear;"
        "import torch; assert CpuKernels.ops() is None;"
        "lin = Int8Linear.from_float(torch.randn(8, 16)); lin.prepare();"
        "assert lin.vnni is None and (lin.dense or lin.weight_t) is not None; print(lin(torch.randn(2, 16)).shape)"
    )
    env = {**os.environ, "R1VOICE_CPU_KERNELS": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "torch.Size([2, 8])" in out.stdout


@needs_kernels
def test_build_is_cached_on_disk() -> None:
    """A second build (a restart) finds the library and compiles nothing."""
    path = CpuKernels.build()
    mtime = path.stat().st_mtime_ns
    before = CpuKernels.build_seconds
    assert CpuKernels.build() == path and path.stat().st_mtime_ns == mtime
    assert CpuKernels.build_seconds == before  # not set again: no compile happened


@needs_kernels
def test_a_library_built_before_loads_where_there_is_no_compiler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An image's runtime has no g++: the library its build stage compiled is used."""
    path = CpuKernels.build()
    assert path.stat().st_mode & 0o005 == 0o005  # a container run as another user loads it
    monkeypatch.setattr(cpu_kernels, "_compiler", lambda: None)
    assert CpuKernels.unavailable_reason() is None
    assert CpuKernels.build() == path


def test_without_a_compiler_or_a_library_built_before_the_reason_says_how_to_build_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cpu_kernels, "_compiler", lambda: None)
    monkeypatch.setattr(cpu_kernels, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(cpu_kernels, "cpu_flags", lambda: set(cpu_kernels.REQUIRED_FLAGS))
    monkeypatch.delenv("R1VOICE_CPU_KERNELS", raising=False)
    reason = CpuKernels.unavailable_reason()
    assert reason is not None and "no C++ compiler" in reason
    assert str(tmp_path / "kernels") in reason and "python -m engine.kernels" in reason
    with pytest.raises(RuntimeError, match=r"no C\+\+ compiler"):
        CpuKernels.build()
    assert not any(tmp_path.rglob("*.so"))


def test_building_them_elsewhere_than_x86_is_a_note_not_a_failed_image_build() -> None:
    """`python -m engine.kernels` in an arm64 image build: no AVX-512 to compile for."""
    code = (
        "import platform, runpy; platform.machine = lambda: 'aarch64'; "
        "runpy.run_module('engine.kernels', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "no C++ CPU kernels for aarch64" in out.stdout


@needs_kernels
def test_the_cache_kernels_refuse_a_dtype_they_do_not_read() -> None:
    q = torch.randn(1, 2, 16)
    cache = torch.zeros(2, 4, 1, 16, dtype=torch.bfloat16)
    tables, lens = torch.tensor([[0]]), torch.tensor([1])
    with pytest.raises(RuntimeError, match="both float32 or both float16"):
        ops.paged_decode_attention(q, cache, cache, tables, lens, 0.25)


@needs_kernels
def test_argmax_rows_is_torch_argmax() -> None:
    """Ties go to the first index, a NaN wins (the first one), short and -inf rows."""
    torch.manual_seed(5)
    for n in (1, 7, 16, 17, 49152):
        x = torch.randn(6, n)
        x[1] = 0.0  # all tied
        x[2] = float("-inf")
        if n > 3:
            x[3, n // 2] = x[3].max() + 1
            x[3, n - 1] = x[3, n // 2]  # a tie with a later index
            x[4, [1, n - 1]] = float("nan")
            x[5, n - 1] = float("inf")
        assert torch.equal(ops.argmax_rows(x), x.argmax(dim=-1)), n
    logits = torch.randn(32, 1000)
    assert torch.equal(ops.argmax_rows(logits[:, ::2]), logits[:, ::2].argmax(dim=-1))


@needs_kernels
def test_a_float16_cache_saturates_instead_of_holding_inf() -> None:
    from engine.layers.attention import _to_cache

    h, kvh, d = 1, 1, 16
    qkv = torch.zeros(1, 3 * d)
    qkv[0, 2 * d :] = 1e6  # v past float16's range
    k_cache = torch.zeros(1, 4, kvh, d, dtype=torch.float16)
    v_cache = torch.zeros(1, 4, kvh, d, dtype=torch.float16)
    ones, zeros = torch.ones(1, d), torch.zeros(1, d)
    ops.rope_and_cache(qkv, ones, zeros, k_cache, v_cache, torch.tensor([2]), h, kvh, d)
    assert bool((v_cache[0, 2] == 65504.0).all())
    assert torch.equal(_to_cache(qkv[:, 2 * d :], torch.float16), v_cache[0, 2].view(1, -1))


@needs_kernels
def test_the_cache_kernels_refuse_slots_and_lengths_outside_the_cache() -> None:
    h, kvh, d = 2, 1, 16
    cache = torch.zeros(2, 4, kvh, d)
    qkv, ones, zeros = torch.zeros(1, (h + 2 * kvh) * d), torch.ones(1, d), torch.zeros(1, d)
    with pytest.raises(RuntimeError, match="outside the cache"):
        ops.rope_and_cache(qkv, ones, zeros, cache, cache.clone(), torch.tensor([8]), h, kvh, d)
    q = torch.zeros(1, h, d)
    with pytest.raises(RuntimeError, match="past its block table"):
        ops.paged_decode_attention(q, cache, cache, torch.tensor([[0]]), torch.tensor([5]), 1.0)
    with pytest.raises(RuntimeError, match="block outside the cache"):
        ops.paged_decode_attention(q, cache, cache, torch.tensor([[7]]), torch.tensor([3]), 1.0)


@needs_kernels
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16])
def test_long_contexts_match_sdpa_and_do_not_depend_on_the_batch(
    cache_dtype: torch.dtype,
) -> None:
    """Contexts of hundreds of blocks: SDPA's result, and a sequence's output is the same
    alone as beside others."""
    torch.manual_seed(7)
    h, kvh, d, bs = 9, 3, 64, 16
    lens = torch.tensor([1100, 3, 512, 513])
    w = -(-int(lens.max()) // bs)
    blocks = 1 + int(sum(-(-int(n) // bs) for n in lens))
    k_cache = torch.randn(blocks, bs, kvh, d).to(cache_dtype)
    v_cache = torch.randn(blocks, bs, kvh, d).to(cache_dtype)
    order = torch.randperm(blocks - 1) + 1
    tables, used = torch.zeros(4, w, dtype=torch.long), 0
    for i, n in enumerate(lens.tolist()):
        need = -(-n // bs)
        tables[i, :need] = order[used : used + need]
        used += need
    q = torch.randn(4, h, d)
    out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5)
    for i in range(4):
        ref = _sdpa_row(q[i], k_cache, v_cache, tables[i], int(lens[i]))
        torch.testing.assert_close(out[i].view(h, d), ref, rtol=1e-5, atol=1e-5)
        alone = ops.paged_decode_attention(
            q[i : i + 1], k_cache, v_cache, tables[i : i + 1], lens[i : i + 1], d**-0.5
        )
        assert torch.equal(alone[0], out[i])


def test_int_mm_is_fast_only_with_avx512bw_that_onednn_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.kernels import cpu_kernels

    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr(cpu_kernels, "cpu_flags", lambda: {"avx2", "fma"})
    assert not cpu_kernels.int_mm_is_fast()
    monkeypatch.setattr(cpu_kernels, "cpu_flags", lambda: {"avx2", "avx512f", "avx512bw"})
    assert cpu_kernels.int_mm_is_fast()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")
    assert not cpu_kernels.int_mm_is_fast()


def _prompt_beside_others(
    kvh: int, d: int, cache_dtype: torch.dtype, ctx: int, n: int, lone: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Caches and the rows of one call: a prompt's last n tokens (up to ctx keys), a lone
    decode of length ``lone`` over a second sequence, then that sequence's first n
    tokens as a prompt; blocks in random order. -> (k_cache, v_cache, tables, lens)"""
    bs = 16
    nb = 2 * (ctx // bs + 1) + 1
    perm = torch.randperm(nb)
    k_cache = torch.randn(nb, bs, kvh, d).to(cache_dtype)
    v_cache = torch.randn(nb, bs, kvh, d).to(cache_dtype)
    first, second = perm[: ctx // bs + 1], perm[ctx // bs + 1 : 2 * (ctx // bs + 1)]
    tables = torch.cat([first.expand(n, -1), second.view(1, -1), second.expand(n, -1)]).contiguous()
    lens = torch.cat(
        [torch.arange(ctx - n + 1, ctx + 1), torch.tensor([lone]), torch.arange(1, n + 1)]
    )
    return k_cache, v_cache, tables, lens


@needs_kernels
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize(
    "h, kvh, d",
    # SmolLM2, Qwen2.5-0.5B, R1-Distill-1.5B, more query heads than a tile, any head_dim
    [(9, 3, 64), (14, 2, 64), (12, 2, 128), (16, 1, 64), (2, 1, 48), (4, 4, 16)],
)
def test_a_prompts_tokens_together_give_the_bits_each_gives_alone(
    cache_dtype: torch.dtype, h: int, kvh: int, d: int
) -> None:
    """A prompt's consecutive tokens in one call share their keys (transposed once and
    multiplied as a matrix), a decode reads them key by key: every token's output is the
    same bits either way, and SDPA's result. 77 tokens: several pieces, a piece's tail;
    a second sequence behind it in the same call, and a lone decode row between."""
    torch.manual_seed(11)
    k_cache, v_cache, tables, lens = _prompt_beside_others(kvh, d, cache_dtype, 300, 77, 37)
    q = torch.randn(len(lens), h, d)
    out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5)
    for i in range(len(lens)):
        alone = ops.paged_decode_attention(
            q[i : i + 1], k_cache, v_cache, tables[i : i + 1], lens[i : i + 1], d**-0.5
        )
        assert torch.equal(alone[0], out[i]), i
        ref = _sdpa_row(q[i], k_cache, v_cache, tables[i], int(lens[i]))
        torch.testing.assert_close(out[i].view(h, d), ref, rtol=1e-5, atol=1e-5)


@needs_kernels
def test_a_prompts_rows_read_blocks_only_from_the_table_checked_for_them() -> None:
    """Rows whose tables agree only over the blocks each one needs (padded past them):
    every piece of the run reads the table checked for the run's longest row, never a
    shorter row's padding (found in review: padding 0 gave wrong rows, a padding past
    the cache read out of bounds)."""
    torch.manual_seed(0)
    bs, kvh, h, d, n = 16, 1, 2, 64, 40
    k_cache, v_cache = torch.randn(8, bs, kvh, d), torch.randn(8, bs, kvh, d)
    blocks = torch.tensor([3, 5, 6])
    lens = torch.arange(1, n + 1)
    for pad in (0, 7):  # 7: a block of the cache that is not the sequence's
        tables = torch.full((n, 3), pad, dtype=torch.long)
        for i, length in enumerate(lens.tolist()):
            need = -(-length // bs) if i in (10, 20, 30) else 3
            tables[i, :need] = blocks[:need]
        q = torch.randn(n, h, d)
        out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5)
        for i in range(n):
            ref = _sdpa_row(q[i], k_cache, v_cache, blocks, int(lens[i]))
            torch.testing.assert_close(out[i].view(h, d), ref, rtol=1e-5, atol=1e-5)


def _bf16_row(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    table: torch.Tensor,
    length: int,
    bf16: int,
) -> torch.Tensor:
    """What the kernel's bf16 modes compute for one row, in float64 (the order of the
    sums aside): q and k less the first key rounded to bf16 (BF16_SCORES); the softmax
    numerators and the values rounded to bf16 and divided by the numerators' unrounded
    sum (BF16_VALUES)."""
    h, kvh, d = q.shape[0], k_cache.shape[2], q.shape[1]
    keys = k_cache[table].reshape(-1, kvh, d)[:length].repeat_interleave(h // kvh, 1).float()
    vals = v_cache[table].reshape(-1, kvh, d)[:length].repeat_interleave(h // kvh, 1).float()
    if bf16 & BF16_SCORES:
        q, keys = q.bfloat16().float(), (keys - keys[:1]).bfloat16().float()
    scores = torch.einsum("hd,khd->hk", q.double(), keys.double()) * d**-0.5
    p = torch.exp(scores - scores.max(dim=1, keepdim=True).values)
    total = p.sum(dim=1, keepdim=True)
    if bf16 & BF16_VALUES:
        p, vals = p.float().bfloat16().double(), vals.bfloat16().float()
    return (torch.einsum("hk,khd->hd", p, vals.double()) / total).float()


@needs_bf16
@pytest.mark.parametrize(
    "bf16",
    [BF16_VALUES, BF16_VALUES | BF16_SCORES, BF16_SCORES, pytest.param(TILES, marks=needs_tiles)],
)
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize(
    "h, kvh, d", [(9, 3, 64), (14, 2, 64), (12, 2, 128), (4, 1, 32), (12, 4, 96), (20, 1, 64)]
)
def test_bf16_products_give_each_token_its_bits_alone_and_rounded_attention(
    bf16: int, cache_dtype: torch.dtype, h: int, kvh: int, d: int
) -> None:
    """With bf16 products a prompt's tokens still get the bits each gets alone, rows of
    odd and even lengths alike (a pair of values straddling a row's end takes a zero
    second value, never the next key), and what they get is attention over the
    bf16-rounded operands."""
    torch.manual_seed(5)
    k_cache, v_cache, tables, lens = _prompt_beside_others(kvh, d, cache_dtype, 301, 45, 38)
    q = torch.randn(len(lens), h, d) * 2
    out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5, bf16)
    exact = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, d**-0.5)
    for i in range(len(lens)):
        alone = ops.paged_decode_attention(
            q[i : i + 1], k_cache, v_cache, tables[i : i + 1], lens[i : i + 1], d**-0.5, bf16
        )
        assert torch.equal(alone[0], out[i]), i
        ref = _bf16_row(q[i], k_cache, v_cache, tables[i], int(lens[i]), bf16)
        # a weight's fp32 rounding may tip its bf16 rounding the other way: 2^-8 of one
        # weight's share
        torch.testing.assert_close(out[i].view(h, d), ref, rtol=1e-3, atol=1e-3)
    # the rounding is real: fp32 attention is further from the rounded operands' result
    assert not torch.allclose(out, exact, rtol=1e-4, atol=1e-4)


@needs_bf16
def test_bf16_scores_round_the_keys_spread_not_their_common_offset() -> None:
    """Keys sharing a large offset (as Qwen2's key bias gives them) lose no more to bf16
    scores than keys without it: the offset moves every score of a row alike, which the
    softmax does not see, so the kernel takes the first key out before rounding (found
    measuring perplexity: rounding the offset cost Qwen2.5-Coder-0.5B +0.65% at 512
    tokens)."""
    torch.manual_seed(3)
    kvh, h, d = 2, 14, 64
    k_cache, v_cache, tables, lens = _prompt_beside_others(kvh, d, torch.float32, 301, 45, 38)
    q = torch.randn(len(lens), h, d)

    def attention(keys: torch.Tensor, bf16: int) -> torch.Tensor:
        return ops.paged_decode_attention(q, keys, v_cache, tables, lens, d**-0.5, bf16)

    exact = attention(k_cache, 0)
    plain = (attention(k_cache, BF16_SCORES) - exact).abs().max()
    offset = (attention(k_cache + 40 * torch.randn(kvh, d), BF16_SCORES) - exact).abs().max()
    assert plain > 0 and offset < 1.5 * plain, (float(plain), float(offset))


@needs_bf16
def test_bf16_products_refuse_a_head_dim_they_do_not_pair() -> None:
    q = torch.randn(1, 2, 48)
    cache = torch.randn(2, 4, 1, 48)
    table, lens = torch.tensor([[0, 1]]), torch.tensor([5])
    with pytest.raises(RuntimeError, match="head_dim % 32 == 0"):
        ops.paged_decode_attention(q, cache, cache, table, lens, 1.0, BF16_VALUES)
    q32, cache32 = q[..., :32].contiguous(), cache[..., :32].contiguous()
    with pytest.raises(RuntimeError, match="a mask of 1"):
        ops.paged_decode_attention(q32, cache32, cache32, table, lens, 1.0, 8)
    with pytest.raises(RuntimeError, match=r"scores and values in bf16 \(mask 7\)"):
        ops.paged_decode_attention(q32, cache32, cache32, table, lens, 1.0, BF16_TILES)


@needs_bf16
def test_attention_on_tiles_refuses_a_head_dim_over_a_tile_row_of_queries() -> None:
    q, cache = torch.randn(1, 2, 160), torch.randn(2, 4, 1, 160)
    with pytest.raises(RuntimeError, match="head_dim <= 128"):
        ops.paged_decode_attention(
            q, cache, cache, torch.tensor([[0, 1]]), torch.tensor([5]), 1.0, TILES
        )


@needs_tiles
def test_attention_on_tiles_over_long_contexts_gives_a_decode_its_prompts_bits() -> None:
    """Rows across many key tiles (1,100 keys: DECODE_KEYS chunks for the decode, a run's
    shared tiles for the prompt) and a prompt tile's rows of different lengths: each row
    the bits it gets alone, near fp32 attention."""
    torch.manual_seed(9)
    k_cache, v_cache, tables, lens = _prompt_beside_others(2, 64, torch.float16, 1100, 40, 700)
    q = torch.randn(len(lens), 14, 64)
    out = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, 0.125, TILES)
    exact = ops.paged_decode_attention(q, k_cache, v_cache, tables, lens, 0.125)
    for i in range(len(lens)):
        alone = ops.paged_decode_attention(
            q[i : i + 1], k_cache, v_cache, tables[i : i + 1], lens[i : i + 1], 0.125, TILES
        )
        assert torch.equal(alone[0], out[i]), i
    torch.testing.assert_close(out, exact, rtol=0.02, atol=0.02)
