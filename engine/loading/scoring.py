"""Scoring a fixed text with the engine's own forward pass: per-token logprobs, perplexity.

Used to measure what quantization costs in quality. Runs the model directly (one
prefill per window over a scratch KV cache), so it must not overlap with steps of the
same engine: call it on a synchronous ``LLM`` between ``generate`` calls.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.layers.attention import AttentionMetadata, PagedAttention, sdpa_mask

LOGITS_ROWS = 256  # positions whose logits are computed at a time


@torch.inference_mode()
def score(llm: Any, token_ids: list[int]) -> list[float]:
    """log p(token_ids[i] | token_ids[:i]) for i >= 1, in one forward pass."""
    model = llm.model
    n = len(token_ids)
    if n < 2:
        return []
    runner = llm.model_runner
    device, dtype = runner.device, runner.dtype
    layers = [m for m in model.modules() if isinstance(m, PagedAttention)]
    kvh, d = layers[0].num_kv_heads, layers[0].head_dim
    saved = [(a.k_cache, a.v_cache) for a in layers]
    try:
        kv_dtype = runner.kv_dtype  # the engine's own cache dtype (float16 rounds K/V)
        for a in layers:  # one block of n slots, outside the engine's pool
            a.k_cache = torch.zeros(1, n, kvh, d, dtype=kv_dtype, device=device)
            a.v_cache = torch.zeros(1, n, kvh, d, dtype=kv_dtype, device=device)
        pos = torch.arange(n, device=device)
        if runner.fused_decode:  # every token through the C++ kernel, as the engine runs
            meta = AttentionMetadata(
                slot_mapping=pos,
                num_decode_tokens=n,
                decode_block_tables=torch.zeros(n, 1, dtype=torch.long, device=device),
                decode_mask=None,
                prefill_query_lens=[],
                prefill_block_tables=[],
                prefill_masks=[],
                decode_lens=pos + 1,
            )
        else:
            visible = pos[None, None, :] <= pos[None, :, None]
            meta = AttentionMetadata(
                slot_mapping=pos,
                num_decode_tokens=0,
                decode_block_tables=None,
                decode_mask=None,
                prefill_query_lens=[n],
                prefill_block_tables=[torch.zeros(1, dtype=torch.long, device=device)],
                prefill_masks=[sdpa_mask(visible, layers[0].num_heads // kvh, dtype)],
            )
        ids = torch.tensor(token_ids, dtype=torch.long, device=device)
        hidden = model(ids, pos, meta)
        out: list[float] = []
        for start in range(0, n - 1, LOGITS_ROWS):  # bounds the [rows, vocab] logits
            end = min(start + LOGITS_ROWS, n - 1)
            logits = model.compute_logits(hidden[start:end]).float()
            logp = torch.log_softmax(logits, dim=-1)
            out += logp.gather(1, ids[start + 1 : end + 1, None])[:, 0].tolist()
        return out
    finally:
        for a, (k, v) in zip(layers, saved, strict=True):
            a.k_cache, a.v_cache = k, v


def perplexity(llm: Any, token_ids: list[int], window: int = 512) -> float:
    """exp(mean negative logprob) over non-overlapping windows of ``window`` tokens."""
    logps: list[float] = []
    for start in range(0, len(token_ids), window):
        logps += score(llm, token_ids[start : start + window])
    return math.exp(-sum(logps) / max(1, len(logps)))
