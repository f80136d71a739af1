"""EngineStats: reset_stats zeroes every part's counters and keeps what is not a count."""

from __future__ import annotations

from pathlib import Path

from engine import LLM, SamplingParams

GREEDY = SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True)


def test_reset_stats_zeroes_the_counters_of_every_part(tiny_llama: Path) -> None:
    llm = LLM(
        str(tiny_llama),
        block_size=4,
        semantic_clustering=True,
        cluster_signature="minhash",
        cluster_min_queue=1,
    )
    shared = list(range(10, 30))
    llm.generate([shared, [*shared, 5]], GREEDY)  # the second hits the first's blocks
    llm.clusterer.pool.submit(lambda: None).result()  # the signing thread is done
    before = llm.stats()
    assert before.generation_tokens and before.prompt_tokens and before.steps
    assert before.embedded_requests == 2
    assert before.prefix_cache_hits and before.prefill_tokens_computed
    learnt = llm.scheduler.cost_model.num_samples
    llm.reset_stats()
    after = llm.stats()
    for name in (
        "prompt_tokens",
        "generation_tokens",
        "prefix_cache_queries",
        "prefix_cache_hits",
        "prefill_tokens_computed",
        "num_preemptions",
        "num_refused",
        "embedded_requests",
        "steps",
    ):
        assert getattr(after, name) == 0, name
    assert after.peak_kv_blocks_used == after.kv_blocks_used == 0
    assert llm.scheduler.cost_model.num_samples == learnt  # not a counter: what it learnt
    assert llm.generate([shared], GREEDY)[0].token_ids  # and the prefix cache stays:
    assert llm.stats().prefix_cache_hits > 0
