"""FlatForward: a decoder's forward pass as one flat loop of kernel calls.

When every part of a layer runs on our C++ CPU kernels, the module tree only routes
tensors between them; at one token per step that routing was the cost: a dozen
``forward`` frames a layer, ``nn.Module.__getattr__`` lookups and packing tuples, a
large share of a small model's decode step (cProfile). This
resolves it all once, when the model is prepared: each layer becomes a tuple of bound
kernels and their weights, and a step is a ``for`` over those tuples. Same kernels, same
order, same arguments: the results are bit-identical to the module path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.attention import AttentionMetadata, PagedAttention
from engine.layers.int4_linear import Int4Linear
from engine.layers.quantization import Int8Linear, our_kernel, row_class
from engine.layers.rotary import RotaryEmbedding

Kernel = Callable[..., torch.Tensor]


def linear_kernel(module: nn.Module) -> tuple[Kernel, tuple[Any, ...]]:
    """(fn, args) with ``fn(x, *args) == module.forward(x)`` for a contiguous fp32 x:
    the projection's C++ kernel and packed weights when it has them (what its
    ``forward`` would call), else its ``forward``."""
    k = CpuKernels.k
    if isinstance(module, Int8Linear) and module.vnni is not None and module.only_ours():
        args = (*module.vnni, module.out_features)
        kernels = tuple(our_kernel(p) for p in module.paths)
        if len(set(kernels)) == 1:
            return kernels[0], args

        def by_rows(x: torch.Tensor, *args: Any) -> torch.Tensor:  # KernelChoice's classes
            return kernels[row_class(x.shape[0])](x, *args)

        return by_rows, args
    if isinstance(module, Int4Linear) and module.vnni is not None:
        return k.int4_linear, (*module.vnni, module.out_features, module.group_size)
    return module.forward, ()


@dataclass(frozen=True)
class FlatLayer:
    """One decoder layer, resolved: norm weights, projections, the layer's cache."""

    input_norm: torch.Tensor
    qkv: tuple[Kernel, tuple[Any, ...]]
    o: tuple[Kernel, tuple[Any, ...]]
    post_norm: torch.Tensor
    gate_up: tuple[Kernel, tuple[Any, ...]]
    down: tuple[Kernel, tuple[Any, ...]]
    attn: PagedAttention


class FlatForward:
    """``forward(input_ids, positions, meta)`` of a Llama model whose norms, RoPE, cache
    writes, SiLU and decode attention all run on the C++ kernels (see ``build``)."""

    def __init__(
        self,
        embed: nn.Module,
        rotary: RotaryEmbedding,
        layers: list[FlatLayer],
        final_norm: tuple[torch.Tensor, float],
        eps: float,
        heads: tuple[int, int, int],
    ) -> None:
        self.embed = embed.forward
        self.rotary = rotary
        self.layers = layers
        self.final_norm = final_norm
        self.eps = eps
        self.num_heads, self.num_kv_heads, self.head_dim = heads

    @classmethod
    def build(cls, model: Any) -> FlatForward | None:
        """The flat pass of a prepared ``LlamaForCausalLM``, or None when some part of it
        does not run on the C++ kernels (then the module path is the only one)."""
        if not model.uses_cpu_kernels or CpuKernels.k is None:
            return None
        layers = []
        for layer in model.layers:
            attention, mlp = layer.self_attn, layer.mlp
            norms = (layer.input_layernorm, layer.post_attention_layernorm)
            if not (attention.fused and mlp.act.fused and all(n.fused for n in norms)):
                return None
            layers.append(
                FlatLayer(
                    input_norm=layer.input_layernorm.weight,
                    qkv=linear_kernel(attention.qkv_proj),
                    o=linear_kernel(attention.o_proj),
                    post_norm=layer.post_attention_layernorm.weight,
                    gate_up=linear_kernel(mlp.gate_up_proj),
                    down=linear_kernel(mlp.down_proj),
                    attn=attention.attn,
                )
            )
        first = model.layers[0].self_attn
        heads = (first.num_heads, first.num_kv_heads, first.head_dim)
        eps = model.layers[0].input_layernorm.eps
        final_norm = (model.norm.weight, model.norm.eps)
        return cls(model.embed_tokens, model.rotary, layers, final_norm, eps, heads)

    def __call__(
        self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata
    ) -> torch.Tensor:
        k = CpuKernels.k
        norm, rope, silu = k.rms_norm_residual, k.rope_and_cache, k.silu_and_mul
        decode_only = not meta.prefill_query_lens and meta.decode_lens is not None
        decode_attention, eps = k.paged_decode_attention, self.eps
        h, kvh, d = self.num_heads, self.num_kv_heads, self.head_dim
        scale = d**-0.5
        x = self.embed(input_ids)
        t = x.shape[0]
        cos, sin = self.rotary.lookup(positions)
        cos, sin = cos.view(t, -1), sin.view(t, -1)
        slots, tables, lens = meta.slot_mapping, meta.decode_block_tables, meta.decode_lens
        residual = None
        for layer in self.layers:
            x, residual = norm(x, residual, layer.input_norm, eps)
            fn, args = layer.qkv
            attn = layer.attn
            q = rope(fn(x, *args), cos, sin, attn.k_cache, attn.v_cache, slots, h, kvh, d)
            if decode_only:
                a = decode_attention(q, attn.k_cache, attn.v_cache, tables, lens, scale, attn.bf16)
            else:
                a = attn.attend_cached(q, meta).contiguous()
            fn, args = layer.o
            x, residual = norm(fn(a, *args), residual, layer.post_norm, eps)
            fn, args = layer.gate_up
            gate_up = fn(x, *args)
            fn, args = layer.down
            x = fn(silu(gate_up), *args)
        x, _ = norm(x, residual, *self.final_norm)
        return x
