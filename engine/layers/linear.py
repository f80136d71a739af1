"""Linear: the one factory every projection is built through (quantization swaps it)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Linear(nn.Module):
    """y = x W^T + b with W stored [out_features, in_features], as in Hugging Face."""

    def __init__(self, in_features: int, out_features: int, bias: bool = False) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


def make_linear(in_features: int, out_features: int, bias: bool = False) -> nn.Module:
    """Build a projection. The loader fills ``weight``/``bias``; a quantized variant
    only has to accept the same state and return the same shapes."""
    return Linear(in_features, out_features, bias)
