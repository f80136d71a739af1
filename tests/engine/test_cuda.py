"""The same engine on CUDA (skipped without a GPU): exact against transformers in fp32."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, SamplingParams
from tests.engine.tiny_models import hf_greedy

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("shape", ["llama-gqa-tied", "qwen2-gqa-bias"])
def test_cuda_greedy_matches_transformers(
    tiny_factory: Callable[..., tuple[Path, Any]], shape: str
) -> None:
    path, hf = tiny_factory(shape)
    prompts = [[5, 9, 3, 7, 11], list(range(2, 40))]
    expected = [hf_greedy(hf, p, 10) for p in prompts]
    llm = LLM(str(path), device="cuda", dtype="float32", block_size=8, quantization="none")
    outs = llm.generate(prompts, SamplingParams(max_tokens=10, temperature=0, ignore_eos=True))
    assert [o.token_ids for o in outs] == expected
    assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total


def test_cuda_bfloat16_default_runs(tiny_llama: Path) -> None:
    llm = LLM(str(tiny_llama))  # auto: cuda, bfloat16
    assert llm.model.embed_tokens.weight.dtype == torch.bfloat16
    out = llm.generate([[1, 2, 3]], SamplingParams(max_tokens=4, seed=1))[0]
    assert len(out.token_ids) <= 4
