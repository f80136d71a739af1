"""RMSNorm, with the residual add fused into the same call."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.kernels.cpu_kernels import CpuKernels


class RMSNorm(nn.Module):
    """Root-mean-square norm computed in float32, like Hugging Face's LlamaRMSNorm."""

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden_size), requires_grad=False)
        self.fused = False  # set by prepare(): our C++ kernel does add + norm in one call

    def prepare(self) -> None:
        w = self.weight
        self.fused = w.device.type == "cpu" and w.dtype == torch.float32
        self.fused = self.fused and CpuKernels.ops() is not None

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:  # one fused op instead of six
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        # HF normalizes in fp32, casts back, then scales in the model dtype.
        y = F.rms_norm(x.float(), self.weight.shape, None, self.eps).to(x.dtype)
        return self.weight * y

    def forward(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (norm(x + residual), x + residual): the new residual stream."""
        if self.fused and x.dim() == 2:
            normed, total = CpuKernels.k.rms_norm_residual(x, residual, self.weight, self.eps)
            return normed, total
        if residual is not None:
            x = x + residual
        return self._norm(x), x
