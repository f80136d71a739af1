"""LLMEngine: continuous batching gives the same tokens as running alone; accounting."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import LLM, SamplingParams

GREEDY = SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)


def prompt(n: int, seed: int) -> list[int]:
    return torch.randint(2, 256, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.fixture(scope="module")
def llm(tiny_llama: Path) -> LLM:
    return LLM(str(tiny_llama), max_num_batched_tokens=16, max_num_seqs=8, block_size=4)


def test_requests_joining_mid_decode_match_solo_runs(llm: LLM) -> None:
    prompts = [prompt(n, i) for i, n in enumerate((5, 30, 11, 2))]
    solo = [llm.generate([p], GREEDY)[0].token_ids for p in prompts]
    first = llm.add_request(prompts[0], GREEDY)
    for _ in range(3):
        llm.step()
    assert 0 < first.num_completion_tokens < 10  # still decoding when the others join
    others = [llm.add_request(p, GREEDY) for p in prompts[1:]]
    while llm.has_unfinished():
        llm.step()
    assert [s.completion_token_ids for s in [first, *others]] == solo
    assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total


def test_a_finished_requests_times_follow_its_steps(llm: LLM) -> None:
    # 16 tokens a step: the 30-token prompt's first token comes a step after its first
    # chunk; both then decode 9 more tokens
    long, short = llm.generate([prompt(30, 1), prompt(5, 2)], GREEDY)
    assert long.times is not None and short.times is not None
    for t in (long.times, short.times):
        assert t.queue_s >= 0 and t.prefill_s >= 0 and t.decode_s > 0
        assert t.inference_s == t.prefill_s + t.decode_s
    assert long.times.prefill_s > 0


def test_preemption_keeps_tokens_exact(tiny_llama: Path) -> None:
    prompts = [prompt(9, 10 + i) for i in range(4)]
    roomy = LLM(str(tiny_llama), block_size=4)
    expected = [o.token_ids for o in roomy.generate(prompts, GREEDY)]
    tight = LLM(str(tiny_llama), block_size=4, num_kv_blocks=8, max_num_seqs=4)
    outs = tight.generate(prompts, GREEDY)
    assert [o.token_ids for o in outs] == expected
    stats = tight.stats()
    assert stats.num_preemptions > 0
    assert stats.kv_blocks_free == stats.kv_blocks_total == 8


def test_stats_and_free_all(llm: LLM) -> None:
    llm.add_request(prompt(20, 1), GREEDY)
    llm.add_request(prompt(20, 2), GREEDY)
    llm.step()
    stats = llm.stats()
    assert stats.num_running == 2 and stats.kv_blocks_used > 0
    assert stats.kv_blocks_used + stats.kv_blocks_free == stats.kv_blocks_total
    llm.free_all()
    stats = llm.stats()
    assert (stats.num_running, stats.num_waiting, stats.kv_blocks_used) == (0, 0, 0)
    assert set(stats.asdict()) >= {
        "num_running",
        "num_waiting",
        "kv_blocks_used",
        "kv_blocks_total",
        "kv_blocks_free",
        "prompt_tokens",
        "generation_tokens",
        "prefix_cache_queries",
        "prefix_cache_hits",
    }


def test_warmup_leaves_engine_clean(llm: LLM) -> None:
    llm.warmup()
    stats = llm.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total
    assert stats.generation_tokens == 0 and stats.num_running == 0


def test_seeded_sampling_is_reproducible_across_batches(llm: LLM) -> None:
    params = SamplingParams(max_tokens=8, temperature=1.0, top_k=50, top_p=0.9, seed=123)
    alone = llm.generate([prompt(7, 3)], params)[0].token_ids
    crowd = llm.generate([prompt(12, 4), prompt(7, 3), prompt(3, 5)], params)[1].token_ids
    assert alone == crowd
    other = llm.generate([prompt(7, 3)], SamplingParams(max_tokens=8, seed=124))[0]
    assert other.token_ids != alone


def test_max_model_len_caps_generation(tiny_llama: Path) -> None:
    small = LLM(str(tiny_llama), max_model_len=12)
    out = small.generate([prompt(8, 1)], SamplingParams(max_tokens=50, ignore_eos=True))[0]
    assert len(out.token_ids) == 4 and out.finish_reason == "length"


def test_sequence_longer_than_the_pool_ends_instead_of_hanging(tiny_llama: Path) -> None:
    small = LLM(str(tiny_llama), block_size=4, num_kv_blocks=4, max_num_seqs=2)
    assert small.max_model_len == 16
    outs = small.generate(
        [prompt(10, 1), prompt(10, 2)], SamplingParams(max_tokens=50, ignore_eos=True)
    )
    assert [len(o.token_ids) for o in outs] == [6, 6]
    assert all(o.finish_reason == "length" for o in outs)
    assert small.stats().kv_blocks_free == 4
