"""Linear: the one factory every projection is built through (quantization swaps it)."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger(__name__)


class Linear(nn.Module):
    """y = x W^T + b with W stored [out_features, in_features], as in Hugging Face.

    After the weights are loaded, ``prepare`` may repack W for the device: on CPU in
    float32 or bfloat16 into oneDNN's blocked layout (``packed``), with which decode
    steps run faster than with the plain layout. The plain weight is then released.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = False) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None
        self.packed: torch.Tensor | None = None

    def prepare(self, release: bool = True) -> None:
        """Pick the fastest layout for the weight's device and dtype (call once, loaded)."""
        w = self.weight.data
        if w.device.type != "cpu" or w.dtype not in (torch.float32, torch.bfloat16):
            return  # CUDA (and fp16) kernels take the row-major layout as it is
        if _onednn_available(w.dtype):
            self.packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            if release:
                self.weight.data = torch.empty(0, dtype=w.dtype)
        elif w.dtype == torch.float32:  # x @ W^T with W^T contiguous: faster GEMV path
            self.weight.data = w.t().contiguous().t()

    def _packed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None:
            if x.dim() == 2 and x.shape[0] == 1:
                # oneDNN sums one row in another order than two or more (its matrix-
                # vector path): a doubled row keeps one token's result the same alone
                # as batched (EngineConfig.batch_invariant), at the price of a row.
                return self._packed(x.expand(2, -1))[:1]
            return self._packed(x)
        return F.linear(x, self.weight, self.bias)


def make_linear(in_features: int, out_features: int, bias: bool = False) -> Linear:
    """Build a projection. The loader fills ``weight``/``bias``; a quantized variant
    only has to accept the same state and return the same shapes."""
    return Linear(in_features, out_features, bias)


_ONEDNN: dict[torch.dtype, bool] = {}


def _onednn_available(dtype: torch.dtype) -> bool:
    """Whether oneDNN's packed linear works here in ``dtype`` (checked once per dtype,
    on a tiny matrix). bfloat16 needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT: on an
    AVX2-only CPU oneDNN refuses to pack it, and the plain matmul serves instead."""
    if dtype not in _ONEDNN:
        try:
            w, x = torch.randn(8, 4, dtype=dtype), torch.randn(2, 4, dtype=dtype)
            packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            y = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
            tol = 1e-5 if dtype == torch.float32 else 5e-2
            _ONEDNN[dtype] = bool(torch.allclose(y.float(), (x @ w.t()).float(), atol=tol))
        except Exception:  # not built with oneDNN, this CPU lacks the dtype, or the op changed
            log.info("oneDNN packed linear unavailable in %s: using plain CPU matmuls", dtype)
            _ONEDNN[dtype] = False
    return _ONEDNN[dtype]
