"""PagedAttention: KV written through a slot mapping, read back through block tables."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from engine.kernels.cpu_kernels import CpuKernels


@dataclass
class AttentionMetadata:
    """Where one step's tokens live in the paged cache; built once, shared by all layers.

    Tokens are laid out decodes first (one query each), then each prefill chunk. On the
    C++ kernels (``decode_lens`` set) the "decode" rows may be every token of the step,
    a prompt's included, each with its own length (EngineConfig.batch_invariant).
    """

    slot_mapping: torch.Tensor  # [tokens] flat slot (block * block_size + offset) per token
    num_decode_tokens: int
    decode_block_tables: torch.Tensor | None  # [decodes, max_blocks], padded with block 0
    decode_mask: torch.Tensor | None  # sdpa_mask of [decodes, 1, context]
    prefill_query_lens: list[int]  # per prefill chunk
    prefill_block_tables: list[torch.Tensor]  # per prefill chunk: its blocks
    prefill_masks: list[torch.Tensor]  # per prefill chunk: sdpa_mask of its causal mask
    decode_lens: torch.Tensor | None = None  # [decodes] context lengths (C++ kernel path)
    # per prefill chunk: its first block when its blocks are consecutive (then K/V are
    # a view of the cache, not a gathered copy), else None
    prefill_block_runs: list[int | None] | None = None


def sdpa_mask(visible: torch.Tensor, groups: int, dtype: torch.dtype) -> torch.Tensor:
    """Turn visible [B, T, C] (True: query t sees key c) into the additive mask ``attend``
    takes, once per step rather than in every layer: 0 where visible, -inf elsewhere,
    with rows laid out as the folded queries (group-major), [B, 1, G*T or 1, C]."""
    b, t, c = visible.shape
    if t > 1:  # a decode's rows are equal for every group: broadcast instead
        visible = visible.unsqueeze(1).expand(b, groups, t, c).reshape(b, groups * t, c)
    mask = torch.zeros(visible.shape, dtype=dtype, device=visible.device)
    return mask.masked_fill_(~visible, float("-inf")).unsqueeze(1)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Grouped-query attention without repeating K/V.

    q [B, T, H, D], k/v [B, C, KVH, D], mask from ``sdpa_mask`` -> [B, T, H*D]. The query heads
    that share a KV head are folded into the query length, so each KV head is one
    matrix-matrix product (a decode becomes [G, D] x [D, C] instead of G vector products).
    """
    b, t, h, d = q.shape
    kvh = k.shape[2]
    g = h // kvh
    q = q.view(b, t, kvh, g, d).permute(0, 2, 3, 1, 4).reshape(b, kvh, g * t, d)
    out = F.scaled_dot_product_attention(
        q, k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask, scale=d**-0.5
    )
    return out.view(b, kvh, g, t, d).permute(0, 3, 1, 2, 4).reshape(b, t, h * d)


def _to_cache(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x in the cache's dtype; saturated into float16's range, as the C++ kernels store
    (an inf there would be a NaN in the softmax)."""
    if dtype == torch.float16 and x.dtype != dtype:
        x = x.clamp(-65504.0, 65504.0)
    return x.to(dtype)


class PagedAttention(nn.Module):
    """Attention over the paged KV cache of one layer.

    The runner assigns ``k_cache``/``v_cache`` ([num_blocks, block_size, kv_heads,
    head_dim]) before the first step. Reading gathers each sequence's blocks into a
    contiguous tensor and runs torch SDPA: simple, exact, and the same code on CPU and
    CUDA.
    """

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.k_cache = torch.empty(0)
        self.v_cache = torch.empty(0)
        self.bf16 = 0  # the C++ kernel's bf16 mask (EngineConfig.attention_bf16)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, meta: AttentionMetadata
    ) -> torch.Tensor:
        """q [T, H, D], k/v [T, KVH, D] for this step's tokens -> [T, H*D]."""
        kvh, d = self.num_kv_heads, self.head_dim
        k_flat = self.k_cache.view(-1, kvh, d)
        v_flat = self.v_cache.view(-1, kvh, d)
        k_flat.index_copy_(0, meta.slot_mapping, _to_cache(k, k_flat.dtype))
        v_flat.index_copy_(0, meta.slot_mapping, _to_cache(v, v_flat.dtype))
        return self.attend_cached(q, meta)

    def attend_cached(self, q: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """Attention of q [T, H, D] over the cache, this step's K/V already written."""
        kvh, d = self.num_kv_heads, self.head_dim
        outs = []
        nd = meta.num_decode_tokens
        if nd and meta.decode_lens is not None:  # C++: straight over the block tables
            assert meta.decode_block_tables is not None
            outs.append(
                CpuKernels.k.paged_decode_attention(
                    q[:nd].contiguous(),
                    self.k_cache,
                    self.v_cache,
                    meta.decode_block_tables,
                    meta.decode_lens,
                    d**-0.5,
                    self.bf16,
                )
            )
        elif nd:
            assert meta.decode_block_tables is not None and meta.decode_mask is not None
            ctx = meta.decode_mask.shape[-1]
            blocks = meta.decode_block_tables.view(-1)
            # index_select: much faster than advanced indexing for this gather on CPU.
            keys = self.k_cache.index_select(0, blocks).view(nd, -1, kvh, d)[:, :ctx]
            values = self.v_cache.index_select(0, blocks).view(nd, -1, kvh, d)[:, :ctx]
            keys, values = keys.to(q.dtype), values.to(q.dtype)  # a float16 cache
            outs.append(attend(q[:nd].unsqueeze(1), keys, values, meta.decode_mask).view(nd, -1))
        start = nd
        runs = meta.prefill_block_runs or [None] * len(meta.prefill_query_lens)
        for qlen, table, mask, first in zip(
            meta.prefill_query_lens,
            meta.prefill_block_tables,
            meta.prefill_masks,
            runs,
            strict=True,
        ):
            ctx = mask.shape[-1]
            if first is not None:  # a long prompt's fresh blocks are usually in a row
                last = first + table.shape[0]
                keys = self.k_cache[first:last].view(-1, kvh, d)[:ctx]
                values = self.v_cache[first:last].view(-1, kvh, d)[:ctx]
            else:
                keys = self.k_cache.index_select(0, table).view(-1, kvh, d)[:ctx]
                values = self.v_cache.index_select(0, table).view(-1, kvh, d)[:ctx]
            keys, values = keys.to(q.dtype), values.to(q.dtype)  # a float16 cache
            qs = q[start : start + qlen].unsqueeze(0)
            outs.append(attend(qs, keys.unsqueeze(0), values.unsqueeze(0), mask)[0])
            start += qlen
        return outs[0] if len(outs) == 1 else torch.cat(outs)
