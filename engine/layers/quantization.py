"""Weight quantization: INT8 per-output-channel (the default) and INT4 group-wise.

gpt-fast style: an offline state-dict transform (``quantize_int8`` / ``quantize_int4``,
cached on disk by ``engine.loading.quantized_model.QuantCache``) plus small modules holding the quantized buffers
(``Int8Linear``, ``Int4Linear``, ``Int8Embedding``). Every kernel choice is made in
``Int8Linear.prepare`` / ``Int4Linear.prepare`` from the weight's device:

INT8 (symmetric, scale per output channel, w = q * s):
  * CPU: activations quantized per row (token) to 15 bits, x = 128 * hi + lo, integer
    sums exact: the quality of weight-only int8 (perplexity unchanged), and a row's
    result does not depend on the batch. Our C++ VNNI kernel (engine.kernels.cpu_kernels)
    does it in one call, bit for bit what ``int8_linear`` computes through
    ``torch._int_mm`` in a dozen ops, and faster, most of all for one row (a decode).
    Without the kernels, ``torch._int_mm`` where it is fast (AVX-512), else the weights
    dequantized once to fp32. Not chosen: 8-bit activations (W8A8: perplexity
    and greedy agreement with the float model suffer); fbgemm's dynamic linear (one
    activation scale for all rows: one token's outliers ruin the others);
    ``torch._weight_int8pack_mm`` (slower than fp32).
  * CUDA: the same ``int8_linear`` when its matmul has more than ``INT_MM_MIN_ROWS``
    rows, else weight-only: ``F.linear(x, q.to(x.dtype)) * s``.
INT4 (asymmetric, per group of ``group_size`` input channels, w = q * s + m, q in 0..15):
  * CPU: our C++ kernel (Q4_1 x Q8_1-style group sums: activations at 8 bits with a
    scale per row and group, ``quantize_activations``; fp16 scales: less error than
    bfloat16 activations, and faster); without it ``aten._weight_int4pack_mm_for_cpu``
    on bfloat16 activations.
  * CUDA: ``aten._weight_int4pack_mm`` (tinygemm) on bfloat16.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.errors import ConfigError
from engine.kernels.cpu_kernels import CpuKernels, int_mm_is_fast, pack_int8
from engine.layers.linear import Linear

log = logging.getLogger(__name__)

METHODS = ("int8", "int4", "none")
INT_MM_MIN_ROWS = 16  # torch._int_mm (CUDA) takes matmuls of more rows than this
INT4_GROUP_SIZES = (32, 64, 128)
CACHE_VERSION = 3  # 2: an int8 embedding / tied head at int4 too; 3: an untied head int8
# Counts quantize_int8/quantize_int4 calls: the tests check a cached load does none.
QUANTIZE_CALLS = {"int8": 0, "int4": 0}


def check_method(method: str, group_size: int) -> None:
    """ConfigError for an unknown method or group size."""
    if method not in METHODS:
        raise ConfigError(f"quantization must be one of {METHODS}, got {method!r}")
    if group_size not in INT4_GROUP_SIZES:
        raise ConfigError(
            f"quantization_group_size must be one of {INT4_GROUP_SIZES}, got {group_size!r}"
        )


# ---- the math (device independent; the tests check it) ------------------------------
def quantize_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: (q int8 [n, k], scales fp32 [n]) with w ~= q * s[:, None]."""
    QUANTIZE_CALLS["int8"] += 1
    w = w.float()
    scales = (w.abs().amax(dim=1) / 127.0).clamp(min=1e-10)
    q = torch.clamp(torch.round(w / scales[:, None]), -127, 127).to(torch.int8)
    return q, scales


def dequantize_int8(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    return q.float() * scales.float()[:, None]


def quantize_int4(
    w: torch.Tensor, group_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric group-wise int4: (q uint8 [n, k] in 0..15, scales [n, k/g], mins [n, k/g])
    with w ~= q * s + m within each group of ``group_size`` input channels."""
    QUANTIZE_CALLS["int4"] += 1
    n, k = w.shape
    g = w.float().reshape(n, k // group_size, group_size)
    lo, hi = g.amin(dim=-1), g.amax(dim=-1)
    scales = ((hi - lo) / 15.0).clamp(min=1e-10)
    q = torch.clamp(torch.round((g - lo[..., None]) / scales[..., None]), 0, 15)
    return q.to(torch.uint8).reshape(n, k), scales, lo


def dequantize_int4(
    q: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor, group_size: int
) -> torch.Tensor:
    n, k = q.shape
    g = q.float().reshape(n, k // group_size, group_size)
    return (g * scales.float()[..., None] + mins.float()[..., None]).reshape(n, k)


def quantize_activations(x: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The int4 kernel's activations: x [m, k] -> (q int8 [m, k], scales fp32 [m, k/g]),
    x ~= q * s per row and group of ``group_size`` inputs (as Q8_1's blocks of 32)."""
    m, k = x.shape
    xg = x.float().reshape(m, k // group_size, group_size)
    s = xg.abs().amax(dim=-1).mul_(1 / 127).clamp_(min=1e-10)
    q = torch.div(xg, s[..., None]).round_().clamp_(-127, 127)
    return q.to(torch.int8).reshape(m, k), s


def pack_nibbles(q: torch.Tensor) -> torch.Tensor:
    """[n, k] values 0..15 -> [n, k/2] uint8, even column in the high nibble (tinygemm's)."""
    q = q.to(torch.uint8)
    return (q[:, ::2] << 4) | q[:, 1::2]


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    n = packed.shape[0]
    return torch.stack([packed >> 4, packed & 15], dim=-1).reshape(n, -1)


def int4_scales_and_zeros(scales: torch.Tensor, mins: torch.Tensor) -> torch.Tensor:
    """The [k/g, n, 2] (scale, zero) tensor of the int4pack kernels, which compute
    w = (q - 8) * scale + zero; ours is w = q * s + m, so zero = m + 8 s."""
    zeros = mins.float() + 8.0 * scales.float()
    return torch.stack([scales.float().t(), zeros.t()], dim=-1).contiguous()


def row_class(rows: int) -> int:
    """Index of a product of ``rows`` rows in kernel_choice.ROW_CLASSES (1-3, 4-8, 9-64,
    65+)."""
    return 0 if rows <= 3 else 1 if rows <= 8 else 2 if rows <= 64 else 3


def our_kernel(path: str) -> Any:
    """The C++ op of one of our int8 paths ("vnni" or "amx"); both read the same packed
    weights and take the same arguments."""
    return CpuKernels.k.int8_linear_amx if path == "amx" else CpuKernels.k.int8_linear


ACTIVATION_SPLIT = True  # int8_linear's activations: 15 bits in two int8 halves


def int8_linear(
    x: torch.Tensor, qweight_t: torch.Tensor, scales: torch.Tensor, split: bool = ACTIVATION_SPLIT
) -> torch.Tensor:
    """y = x W^T with W = q * s through ``torch._int_mm``; qweight_t is q^T [k, n]. x is
    quantized per row to 8 bits (``split=False``: W8A8), or to 15 bits, 128 * hi + lo
    (hi in [-128, 127], lo in [0, 127]), both rows of one int8 matmul."""
    xf = x if x.dtype == torch.float32 else x.float()
    m = xf.shape[0]
    top = 16383.0 if split else 127.0
    sx = xf.abs().amax(dim=-1, keepdim=True).mul_(1 / top).clamp_(min=1e-10)
    xq = torch.div(xf, sx).round_()  # |xq| <= top by construction
    if split:
        hi = xq.mul(1 / 128).floor_()  # exact: xq is an integer, 128 a power of two
        acc = torch._int_mm(torch.cat([hi, xq.sub_(hi * 128)]).to(torch.int8), qweight_t)
        y = acc[:m].mul(128.0).add_(acc[m:]).mul_(sx).mul_(scales)
    else:
        y = torch._int_mm(xq.to(torch.int8), qweight_t).mul(sx).mul_(scales)
    return y if y.dtype == x.dtype else y.to(x.dtype)


# ---- modules -------------------------------------------------------------------------
class Int8Linear(nn.Module):
    """y = x (q * s)^T + b; int8 ``weight`` [out, in] and fp32 ``scales`` [out] buffers."""

    weight: torch.Tensor
    scales: torch.Tensor

    def __init__(self, in_features: int, out_features: int, bias: bool = False) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer("weight", torch.empty(out_features, in_features, dtype=torch.int8))
        self.register_buffer("scales", torch.empty(out_features, dtype=torch.float32))
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None
        self.weight_t: torch.Tensor | None = None  # q^T for torch._int_mm (CUDA)
        # our C++ kernel's layout (CPU): packed weight, row sums, scales, bias
        self.vnni: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None] | None
        self.vnni = None
        self.dense: Linear | None = None  # CPU without the kernels (prepare)
        self.stored_bytes = 0
        # per row class (kernel_choice.ROW_CLASSES): "vnni" or "amx" (our kernels, one
        # weight layout) or "int_mm" (torch._int_mm), the same bits; take_paths sets what
        # KernelChoice measured
        self.paths: tuple[str, ...] = ("vnni",) * 4

    @classmethod
    def from_float(cls, w: torch.Tensor, bias: torch.Tensor | None = None) -> Int8Linear:
        module = cls(w.shape[1], w.shape[0], bias is not None)
        module.weight, module.scales = quantize_int8(w)
        if bias is not None:
            module.bias = nn.Parameter(bias.detach().clone(), requires_grad=False)
        return module

    def prepare(self, release: bool = True) -> None:
        if self.vnni is not None:  # packed already (``load_packed``)
            return
        q = self.weight
        self.stored_bytes = q.numel() + 4 * self.scales.numel()
        if q.device.type == "cpu" and CpuKernels.ops() is not None:
            # int8_linear in one call, the activation split fused in (module docstring)
            self.vnni = pack_int8(q, self.scales, self.bias)
            if release:
                self.weight = torch.empty(0, dtype=torch.int8)
        elif q.device.type == "cpu" and not int_mm_is_fast():
            # torch._int_mm without AVX-512 is a slow loop (on AVX2, 6x the time of the
            # fp32 matmul at decode); the int8 weights dequantized once run through the
            # fp32 one instead: W8A32, four times the memory of the weights.
            self.dense = Linear(self.in_features, self.out_features, self.bias is not None)
            self.dense.weight.data = dequantize_int8(q, self.scales)
            if self.bias is not None:
                self.dense.bias = self.bias
            self.dense.prepare(release)
            self.stored_bytes = 0  # the fp32 copy is counted as the Linear it is
            if release:
                self.weight = torch.empty(0, dtype=torch.int8)
        elif q.device.type in ("cpu", "cuda"):
            self.weight_t = q.t().contiguous()
            if release and q.device.type == "cpu":  # CUDA keeps it for weight-only
                self.weight = torch.empty(0, dtype=torch.int8)

    def load_packed(self, vnni: tuple[torch.Tensor, ...]) -> None:
        """Take the kernel's layout as ``prepare`` made it (a cache of it: no repacking)."""
        packed, rowsum, scales, *bias = vnni
        self.vnni = (packed, rowsum, scales, bias[0] if bias else None)
        self.weight = torch.empty(0, dtype=torch.int8)
        self.stored_bytes = self.in_features * self.out_features + 4 * self.out_features

    def take_paths(self, paths: tuple[str, ...]) -> None:
        """Use ``paths[row_class(rows)]`` for a product of ``rows`` rows (KernelChoice),
        keeping only the weight layouts those paths read. Only a module prepared on our
        CPU kernels has the choice."""
        if self.vnni is None:
            return
        self.paths = paths
        if "int_mm" in paths and self.weight_t is None:
            packed = self.vnni[0]  # [n/16, k/4, 16, 4] -> q [n, k]: pack_int8 undone
            rows, cols = packed.shape[0] * 16, packed.shape[1] * 4
            q = packed.permute(0, 2, 1, 3).reshape(rows, cols)
            self.weight_t = q[: self.out_features, : self.in_features].t().contiguous()
        if "vnni" not in paths and "amx" not in paths:
            self.vnni = None

    def only_ours(self) -> bool:
        """Whether every product runs on our kernels, VNNI or AMX (FlatForward may then
        call them directly)."""
        return self.vnni is not None and "int_mm" not in self.paths

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.vnni is not None and x.dtype == torch.float32:
            path = self.paths[row_class(x.shape[0])]
            if path != "int_mm":
                packed, rowsum, scales, bias = self.vnni
                return our_kernel(path)(
                    x.contiguous(), packed, rowsum, scales, bias, self.out_features
                )
        if self.dense is not None:
            return self.dense(x if x.dtype == torch.float32 else x.float()).to(x.dtype)
        rows = x.shape[0] * (2 if ACTIVATION_SPLIT else 1)
        if self.weight_t is not None and (x.device.type == "cpu" or rows > INT_MM_MIN_ROWS):
            y = int8_linear(x, self.weight_t, self.scales)
        else:  # weight-only: dequantize inside the matmul's input cast
            y = F.linear(x, self.weight.to(x.dtype)) * self.scales.to(x.dtype)
        return y if self.bias is None else y + self.bias


class Int8Embedding(nn.Module):
    """An embedding table stored int8 with one scale per row (token).

    A tied LM head reuses the same table: the head's output channels are its rows, so
    the per-row scales are the per-output-channel scales ``Int8Linear`` wants.
    ``weight`` is an empty tensor of the activation dtype, kept so code that reads
    ``embed_tokens.weight.device/dtype`` still sees the model's device and dtype.
    """

    qweight: torch.Tensor
    scales: torch.Tensor

    def __init__(self, q: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("qweight", q)
        self.register_buffer("scales", scales)
        self.weight = nn.Parameter(torch.empty(0, dtype=dtype, device=q.device), False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows = self.qweight[ids].to(self.weight.dtype)
        return rows * self.scales[ids].to(self.weight.dtype)[:, None]
