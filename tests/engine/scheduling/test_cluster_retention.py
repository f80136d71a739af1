"""Prompt clustering's jobs: MinHash clusters, cluster-aware retention of KV blocks,
co-scheduling of a shared prefix, exactness, and a signature that never delays a request."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from engine import SamplingParams
from engine.block_manager import BlockManager
from engine.llm_engine import LLMEngine
from engine.scheduling.cluster_demand import (
    RECENT_FINISHES,
    RECENT_S,
    WAITING_WEIGHT,
    ClusterDemand,
)
from engine.scheduling.clustering import Clusterer, LeaderClusters
from engine.scheduling.prompt_signature import MinHasher, jaccard
from engine.sequence import Sequence
from tests.engine.test_prefix_cache import EXACT, GREEDY, admit_all, computed, make_sched, seq


def _cached_then_freed(bm: BlockManager, tokens: list[int], cluster: int) -> Sequence:
    s = computed(bm, seq(tokens))
    s.cluster_id = cluster
    bm.deallocate(s)
    return s


DOC_A = list(range(100, 109))  # 2 full blocks of 4 + 1 token
DOC_B = list(range(200, 209))


def test_eviction_keeps_the_prefix_of_a_cluster_with_waiting_members() -> None:
    def pool(demand: dict[int, float]) -> BlockManager:
        bm = BlockManager(num_blocks=6, block_size=4)  # room for the two documents only
        _cached_then_freed(bm, DOC_A, cluster=0)  # freed first: LRU would evict it first
        _cached_then_freed(bm, DOC_B, cluster=1)
        bm.set_cluster_demand(demand)
        assert bm.allocate(seq(list(range(300, 309))))  # 3 new blocks must come from a doc
        return bm

    a_member = seq([*DOC_A[:8], 1])
    b_member = seq([*DOC_B[:8], 1])
    lru = pool({})
    assert lru.num_cached_tokens(a_member) == 0 and lru.num_cached_tokens(b_member) == 8
    kept = pool({0: 1.0})  # a request of A's cluster waits
    assert kept.num_cached_tokens(a_member) == 8  # A's whole prefix stays findable
    # the three blocks came from A's partial tail (nothing findable in it) and B's tail
    assert kept.num_cached_tokens(b_member) == 4
    assert kept.num_retained > 0 and lru.num_retained == 0


def test_retention_never_blocks_an_admission_that_needs_the_space() -> None:
    bm = BlockManager(num_blocks=6, block_size=4)
    _cached_then_freed(bm, DOC_A, cluster=0)
    _cached_then_freed(bm, DOC_B, cluster=1)
    bm.set_cluster_demand({0: 5.0, 1: 5.0})  # both wanted
    big = seq(list(range(400, 421)))  # 6 blocks: the whole pool
    assert bm.allocate(big)
    assert bm.num_free_blocks == 0 and len(big.block_table) == 6
    bm.deallocate(big)
    assert bm.num_free_blocks == 6


def test_demand_counts_waiting_members_and_recent_finishes() -> None:
    demand = ClusterDemand()
    done = seq([1, 2, 3])
    done.cluster_id = 7
    demand.finished(done)
    waiting = [seq([4, 5]), seq([6, 7]), seq([8, 9])]
    waiting[0].cluster_id = waiting[1].cluster_id = 3  # the last one has no cluster yet
    assert demand.of(waiting) == {3: 2 * WAITING_WEIGHT, 7: 1.0}
    later = demand.of(waiting, now=10**9)  # the finish is old news
    assert later == {3: 2 * WAITING_WEIGHT} and RECENT_S < 10**9
    for _ in range(RECENT_FINISHES):  # only the last RECENT_FINISHES finishes count
        other = seq([1])
        other.cluster_id = 8
        demand.finished(other)
    assert demand.of([]) == {8: float(RECENT_FINISHES)}


def test_a_shared_prefix_is_computed_once_across_chunked_steps() -> None:
    """b shares a's 20-token document; a's prefill takes several steps (8 tokens each).
    b waits until the document is cached and then hits all of it, instead of computing
    blocks 1-4 again beside a (what holding back for the first block alone did)."""
    s = make_sched(max_num_seqs=4, max_num_batched_tokens=8)
    doc = list(range(20))
    a, b = seq([*doc, 1], t=0.0), seq([*doc, 2], t=1.0)
    s.add(a)
    s.add(b)
    admitted_at = {}
    step = 0
    while s.has_unfinished():
        batch = s.schedule()
        for q in batch.seqs:
            admitted_at.setdefault(q.request_id, (step, q.num_computed_tokens))
        s.postprocess(
            batch,
            [
                7 if q.num_computed_tokens + n == q.num_tokens else None
                for q, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
            ],
        )
        step += 1
    assert admitted_at[a.request_id] == (0, 0)
    step_b, cached_b = admitted_at[b.request_id]
    assert cached_b == 20 and step_b >= 3  # a computed 20 tokens in 8-token steps first
    assert s.prefill_tokens == 21 + 1  # the document once, then each last token


def test_minhash_groups_prompts_that_share_a_document() -> None:
    rng = np.random.default_rng(1)
    docs = [list(rng.integers(0, 30_000, size=400)) for _ in range(3)]
    questions = [list(rng.integers(0, 30_000, size=12)) for _ in range(4)]
    hasher = MinHasher()
    clusters = LeaderClusters(threshold=0.5, similarity=jaccard)
    ids = [[clusters.assign(hasher.signature(d + q)) for q in questions] for d in docs]
    assert all(len(set(row)) == 1 for row in ids)  # one cluster per document
    assert len({row[0] for row in ids}) == 3
    # the estimate tracks the true Jaccard of the 4-gram sets (64 hashes: +-0.15)
    half = docs[0][:200] + docs[1][:200]
    est = float(jaccard(hasher.signature(docs[0])[None, :], hasher.signature(half))[0])
    grams = lambda t: {tuple(t[i : i + 4]) for i in range(len(t) - 3)}  # noqa: E731
    true = len(grams(docs[0]) & grams(half)) / len(grams(docs[0]) | grams(half))
    assert abs(est - true) < 0.15, (est, true)


def test_clustering_on_or_off_gives_identical_greedy_tokens(tiny_llama: Path) -> None:
    kw = dict(block_size=4, num_kv_blocks=24, max_num_seqs=4, max_num_batched_tokens=8, **EXACT)
    on = LLMEngine(str(tiny_llama), semantic_clustering=True, cluster_min_queue=1, **kw)  # type: ignore[arg-type]
    off = LLMEngine(str(tiny_llama), semantic_clustering=False, **kw)  # type: ignore[arg-type]
    docs = [[(i * 17 + d * 5) % 240 + 3 for i in range(18)] for d in range(3)]
    prompts = [[*docs[d % 3], 50 + d] for d in range(7)]  # interleaved, pool too small
    try:
        expected = [o.token_ids for o in off.generate(prompts, GREEDY)]
        assert [o.token_ids for o in on.generate(prompts, GREEDY)] == expected
        assert on.clusterer is not None and on.clusterer.stats()["embedded_requests"] > 0
        stats = on.stats()
        assert stats.kv_blocks_free == stats.kv_blocks_total
    finally:
        for engine in (on, off):
            if engine.clusterer is not None:
                engine.clusterer.close()


def test_a_request_never_waits_for_its_signature(tiny_llama: Path) -> None:
    engine = LLMEngine(
        str(tiny_llama),
        block_size=4,
        num_kv_blocks=32,
        semantic_clustering=True,
        cluster_min_queue=1,
        **EXACT,  # type: ignore[arg-type]
    )
    clusterer: Clusterer = engine.clusterer
    release = threading.Event()
    real_sign = clusterer._sign

    def slow_sign(s: Sequence) -> np.ndarray:
        release.wait(timeout=60)
        return real_sign(s)

    clusterer._sign = slow_sign
    try:
        request = engine.add_request([5, 6, 7, 8, 9], SamplingParams(max_tokens=3))
        while engine.has_unfinished():
            engine.step()
        assert request.is_finished and len(request.completion_token_ids) == 3
        assert request.cluster_id is None  # served before its signature was ready
    finally:
        release.set()
        clusterer.close()
    _ = admit_all  # the shared helpers stay importable from one place


def test_a_high_priority_request_never_waits_on_a_shared_prefill() -> None:
    """Co-scheduling must not invert priorities: a voice turn (priority -1) sharing a
    long prompt's document starts at once instead of waiting for its prefill."""
    s = make_sched("priority", max_num_seqs=4, max_num_batched_tokens=8, max_step_ms=None)
    doc = list(range(20))
    bulk = Sequence([*doc, 1], SamplingParams(max_tokens=2), None, 5, 0.0)
    s.add(bulk)
    first = s.schedule()
    assert first.seqs == [bulk]
    s.postprocess(first, [None])
    voice = Sequence([*doc, 2], SamplingParams(max_tokens=2), None, -1, 1.0)
    low = Sequence([*doc, 3], SamplingParams(max_tokens=2), None, 5, 1.0)
    s.add(voice)
    s.add(low)
    second = s.schedule()
    assert voice in second.seqs and low not in second.seqs  # low waits for bulk's blocks
