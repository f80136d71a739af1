"""Int4Linear: int4 weights in groups along the input channels (see quantization.py for
the format and the kernel choice)."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import nn

from engine.kernels.cpu_kernels import CpuKernels, pack_int4
from engine.layers.quantization import (
    dequantize_int4,
    int4_scales_and_zeros,
    pack_nibbles,
    quantize_int4,
    unpack_nibbles,
)

log = logging.getLogger(__name__)


class Int4Linear(nn.Module):
    """y = x W^T + b with W stored as int4 groups: ``weight`` uint8 [out, in/2] (two
    values a byte), ``scales`` and ``mins`` fp32 [out, in/group_size]."""

    weight: torch.Tensor
    scales: torch.Tensor
    mins: torch.Tensor

    def __init__(
        self, in_features: int, out_features: int, group_size: int, bias: bool = False
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.group_size = in_features, out_features, group_size
        groups = in_features // group_size
        self.register_buffer(
            "weight", torch.empty(out_features, in_features // 2, dtype=torch.uint8)
        )
        self.register_buffer("scales", torch.empty(out_features, groups, dtype=torch.float32))
        self.register_buffer("mins", torch.empty(out_features, groups, dtype=torch.float32))
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None
        self.packed: torch.Tensor | None = None
        self.scales_and_zeros: torch.Tensor | None = None
        self.vnni: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None] | None
        self.vnni = None  # our C++ kernel's layout (CPU): packed, scales, mins, bias
        self.kernel = "dequantize"
        self.stored_bytes = 0

    @classmethod
    def from_float(
        cls, w: torch.Tensor, group_size: int, bias: torch.Tensor | None = None
    ) -> Int4Linear:
        module = cls(w.shape[1], w.shape[0], group_size, bias is not None)
        q, module.scales, module.mins = quantize_int4(w, group_size)
        module.weight = pack_nibbles(q)
        if bias is not None:
            module.bias = nn.Parameter(bias.detach().clone(), requires_grad=False)
        return module

    def load_packed(self, vnni: tuple[torch.Tensor, ...]) -> None:
        """Take the kernel's layout as ``prepare`` made it (a cache of it: no repacking)."""
        packed, scales, mins, *bias = vnni
        self.vnni = (packed, scales, mins, bias[0] if bias else None)
        self.kernel = "vnni_cpu"
        self.weight = torch.empty(0, dtype=torch.uint8)
        self.stored_bytes = _layout_bytes(packed, scales, mins)

    def prepare(self, release: bool = True) -> None:
        if self.vnni is not None:  # packed already (``load_packed``)
            return
        self.stored_bytes = sum(t.numel() * t.element_size() for t in self.buffers())
        device = self.weight.device
        if device.type == "cpu" and CpuKernels.ops() is not None and self.in_features % 8 == 0:
            # Our VNNI kernel before int4pack (see the module docstring).
            q = unpack_nibbles(self.weight)
            self.vnni = pack_int4(q, self.scales, self.mins, self.bias)
            self.kernel = "vnni_cpu"
            self.stored_bytes = _layout_bytes(*self.vnni[:3])
            if release:
                self.weight = torch.empty(0, dtype=torch.uint8)
            return
        sz = int4_scales_and_zeros(self.scales, self.mins).to(torch.bfloat16)
        try:
            if device.type == "cpu":
                q = unpack_nibbles(self.weight).to(torch.int32)
                self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
                self.kernel = "int4pack_cpu"
            elif device.type == "cuda":
                tiles = next(t for t in (8, 4, 2) if self.in_features % (16 * t) == 0)
                self.packed = torch.ops.aten._convert_weight_to_int4pack(self.weight, tiles)
                self.kernel = "int4pack_cuda"
        except (RuntimeError, StopIteration) as exc:  # shape or build the kernel lacks
            log.info("int4 kernel unavailable (%s): dequantizing per call", exc)
            self.packed = None
        if self.packed is not None:
            self.scales_and_zeros = sz
            self.stored_bytes = _layout_bytes(self.packed, sz)
            if release:
                self.weight = torch.empty(0, dtype=torch.uint8, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.vnni is not None and x.dtype == torch.float32:
            packed, scales, mins, bias = self.vnni
            return CpuKernels.k.int4_linear(
                x.contiguous(), packed, scales, mins, bias, self.out_features, self.group_size
            )
        if self.packed is not None and self.scales_and_zeros is not None:
            op = (
                torch.ops.aten._weight_int4pack_mm_for_cpu
                if self.kernel == "int4pack_cpu"
                else torch.ops.aten._weight_int4pack_mm
            )
            y = op(x.to(torch.bfloat16), self.packed, self.group_size, self.scales_and_zeros)
            y = y.to(x.dtype)
        else:
            w = dequantize_int4(
                unpack_nibbles(self.weight), self.scales, self.mins, self.group_size
            )
            y = F.linear(x, w.to(x.dtype))
        return y if self.bias is None else y + self.bias


def _layout_bytes(*tensors: torch.Tensor) -> int:
    """Bytes of the kernel's layout (its fp16 scales and mins, not the fp32 ones it was
    packed from): what a product reads."""
    return sum(t.numel() * t.element_size() for t in tensors)
