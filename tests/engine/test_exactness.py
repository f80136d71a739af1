"""Greedy tokens of the engine == transformers' greedy tokens, token for token (fp32)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, SamplingParams
from tests.engine.tiny_models import TINY_SHAPES, hf_greedy

MAX_NEW = 12


def prompts(vocab: int, lengths: tuple[int, ...] = (3, 17, 40, 9)) -> list[list[int]]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randint(2, vocab, (n,), generator=gen).tolist() for n in lengths]


ENGINE_SETTINGS = {
    "default": dict(),
    # Prefill chunks of at most 8 tokens and blocks that no prompt length divides.
    "chunked-odd-blocks": dict(max_num_batched_tokens=8, max_num_seqs=4, block_size=5),
}


@pytest.mark.parametrize("settings", sorted(ENGINE_SETTINGS))
@pytest.mark.parametrize("shape", sorted(TINY_SHAPES))
def test_greedy_matches_transformers(
    tiny_factory: Callable[..., tuple[Path, Any]], shape: str, settings: str
) -> None:
    path, hf = tiny_factory(shape)
    batch = prompts(hf.config.vocab_size)
    expected = [hf_greedy(hf, p, MAX_NEW) for p in batch]
    llm = LLM(str(path), dtype="float32", quantization="none", **ENGINE_SETTINGS[settings])
    outs = llm.generate(batch, SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True))
    assert [o.token_ids for o in outs] == expected
    assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total


def test_prefix_cache_hit_gives_same_tokens(tiny_factory: Callable[..., tuple[Path, Any]]) -> None:
    path, hf = tiny_factory("llama-gqa-tied")
    shared = prompts(hf.config.vocab_size, (40,))[0]
    batch = [[*shared, 5, 6, 7], [*shared, 9]]
    expected = [hf_greedy(hf, p, MAX_NEW) for p in batch]
    llm = LLM(str(path), block_size=8, quantization="none")
    params = SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True)
    first = llm.generate(batch[:1], params)[0]
    second = llm.generate(batch[1:], params)[0]
    assert second.num_cached_tokens == 40  # five full blocks of the shared prefix
    assert [first.token_ids, second.token_ids] == expected
    stats = llm.stats()
    assert stats.prefix_cache_hits == 40
    assert stats.kv_blocks_free == stats.kv_blocks_total


@pytest.mark.parametrize("batch_size", [1, 2, 5, 8, 16, 32])
def test_greedy_matches_transformers_at_every_batch_size(
    tiny_factory: Callable[..., tuple[Path, Any]], batch_size: int
) -> None:
    """The decode path (C++ kernels where available) at each batch size: every row's
    tokens are transformers' own, whatever the rows beside it."""
    path, hf = tiny_factory("qwen2-gqa-bias")
    lengths = tuple(3 + (7 * i) % 29 for i in range(batch_size))
    batch = prompts(hf.config.vocab_size, lengths)
    expected = [hf_greedy(hf, p, 6) for p in batch]
    llm = LLM(str(path), dtype="float32", quantization="none", max_num_seqs=32, block_size=4)
    outs = llm.generate(batch, SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True))
    assert [o.token_ids for o in outs] == expected
    assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total
