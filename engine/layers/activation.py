"""SiluAndMul: the SwiGLU gate applied to the fused gate/up projection."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.kernels.cpu_kernels import CpuKernels


class SiluAndMul(nn.Module):
    """silu(gate) * up, where the input is [gate | up] along the last dimension."""

    fused = False  # set by LlamaForCausalLM.prepare: one C++ call on CPU fp32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused and x.dtype == torch.float32 and x.dim() == 2:
            return CpuKernels.k.silu_and_mul(x)
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up
