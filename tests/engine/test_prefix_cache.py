"""Prefix KV reuse: exactness, sharing, LRU eviction, salts, cache-aware and clustered picks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from engine import SamplingParams
from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.llm_engine import LLMEngine
from engine.scheduler import Scheduler
from engine.scheduling.clustering import LeaderClusters
from engine.sequence import Sequence, SequenceStatus

# Exactness is defined on unquantized weights (a quantized kernel may round differently
# for different batch shapes, and a cache hit changes the prefill shape).
EXACT = {"quantization": "none"} if "quantization" in EngineConfig.__dataclass_fields__ else {}
GREEDY = SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True)


def seq(tokens: list[int], salt: str | None = None, t: float = 0.0) -> Sequence:
    return Sequence(tokens, SamplingParams(max_tokens=2), None, 0, t, cache_salt=salt)


def computed(bm: BlockManager, s: Sequence) -> Sequence:
    """Allocate s and mark its whole prompt computed (as after its prefill)."""
    assert bm.allocate(s)
    s.num_computed_tokens = s.num_tokens
    bm.cache_computed_blocks(s)
    return s


@pytest.fixture(scope="module")
def engines(tiny_llama: Path) -> tuple[LLMEngine, LLMEngine]:
    kw = dict(block_size=4, num_kv_blocks=64, max_num_seqs=4, max_num_batched_tokens=8, **EXACT)
    return (
        LLMEngine(str(tiny_llama), enable_prefix_caching=True, **kw),  # type: ignore[arg-type]
        LLMEngine(str(tiny_llama), enable_prefix_caching=False, **kw),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("prefix_len", [3, 4, 21])  # under a block, one block, chunked
def test_greedy_outputs_identical_with_and_without_prefix_cache(
    engines: tuple[LLMEngine, LLMEngine], prefix_len: int
) -> None:
    on, off = engines
    prefix = [(i * 13) % 250 + 2 for i in range(prefix_len)]
    prompts = [[*prefix, 40 + i, 41 + i] for i in range(3)] + [list(prefix)]
    expected = [o.token_ids for o in off.generate(prompts, GREEDY)]
    assert [o.token_ids for o in on.generate(prompts, GREEDY)] == expected  # concurrent
    again = [on.generate([p], GREEDY)[0] for p in prompts]  # one by one: cache hits
    alone = [off.generate([p], GREEDY)[0].token_ids for p in prompts]
    assert [o.token_ids for o in again] == alone
    if prefix_len >= 8:
        assert all(o.num_cached_tokens >= 4 * (prefix_len // 4) - 4 for o in again)
    for engine in engines:
        stats = engine.stats()
        assert stats.kv_blocks_free == stats.kv_blocks_total  # cached blocks count as free
    assert on.stats().prefix_cache_hits > 0 and off.stats().prefix_cache_hits == 0


def test_shared_blocks_are_never_freed_while_referenced() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    a = computed(bm, seq(list(range(9))))  # 3 blocks, 2 full
    b = seq([*range(8), 99])
    assert bm.allocate(b) and b.num_computed_tokens == 8
    shared = b.block_table[:2]
    assert shared == a.block_table[:2]
    bm.deallocate(a)
    assert all(bm.blocks[i].ref_count == 1 and i not in bm.free_blocks for i in shared)
    filler = seq(list(range(100, 120)))  # 5 blocks: everything free, none of b's
    assert bm.allocate(filler)
    assert not set(filler.block_table) & set(b.block_table)
    assert not bm.allocate(seq(list(range(200, 205))))  # pool exhausted, b intact
    bm.deallocate(b)
    bm.deallocate(filler)
    assert bm.num_free_blocks == bm.num_blocks


def test_eviction_takes_least_recently_freed_unreferenced_blocks_first() -> None:
    bm = BlockManager(num_blocks=6, block_size=4)
    old = computed(bm, seq(list(range(9))))  # 3 blocks
    new = computed(bm, seq(list(range(50, 59))))  # 3 blocks
    bm.deallocate(old)
    bm.deallocate(new)
    assert bm.allocate(seq(list(range(300, 311))))  # 3 blocks: old's go first
    assert bm.num_cached_tokens(seq(list(range(9)))) == 0
    assert bm.num_cached_tokens(seq(list(range(50, 59)))) == 8


def test_different_salts_never_share_blocks() -> None:
    bm = BlockManager(num_blocks=16, block_size=4)
    tokens = list(range(13))
    computed(bm, seq(tokens, salt="tenant-a"))
    assert bm.num_cached_tokens(seq(tokens, salt="tenant-b")) == 0
    assert bm.num_cached_tokens(seq(tokens)) == 0
    assert bm.num_cached_tokens(seq(tokens, salt="tenant-a")) == 12
    b = seq(tokens, salt="tenant-b")
    assert bm.allocate(b) and b.num_computed_tokens == 0


def test_salted_requests_compute_their_own_prefix(engines: tuple[LLMEngine, LLMEngine]) -> None:
    on, _ = engines
    prompt = [(i * 7) % 250 + 2 for i in range(17)]
    first = on.add_request(prompt, GREEDY, cache_salt="x")
    while on.has_unfinished():
        on.step()
    other = on.add_request(prompt, GREEDY, cache_salt="y")
    same = on.add_request(prompt, GREEDY, cache_salt="x")
    while on.has_unfinished():
        on.step()
    assert other.num_cached_tokens == 0 and same.num_cached_tokens == 16
    assert other.completion_token_ids == same.completion_token_ids == first.completion_token_ids


def make_sched(policy: str = "fcfs", **cfg: object) -> Scheduler:
    config = EngineConfig(model="unused", block_size=4, scheduling_policy=policy, **cfg)  # type: ignore[arg-type]
    return Scheduler(config, BlockManager(128, 4), max_model_len=1000)


def admit_all(s: Scheduler) -> list[Sequence]:
    order: list[Sequence] = []
    while s.has_unfinished():
        batch = s.schedule()
        s.postprocess(
            batch,
            [
                7 if q.num_computed_tokens + n == q.num_tokens else None
                for q, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
            ],
        )
        order += [q for q in batch.seqs if q not in order]
    return order


def test_cache_aware_pick_prefers_the_longest_cached_prefix() -> None:
    s = make_sched(max_num_seqs=1, max_num_batched_tokens=64)
    s.block_manager.deallocate(computed(s.block_manager, seq(list(range(17)))))
    cold = seq(list(range(500, 517)), t=0.0)
    warm = seq([*range(16), 900], t=1.0)
    s.add(cold)
    s.add(warm)
    assert admit_all(s) == [warm, cold]
    s2 = make_sched(max_num_seqs=1, max_num_batched_tokens=64, cache_aware_scheduling=False)
    computed(s2.block_manager, seq(list(range(17))))
    cold2, warm2 = seq(list(range(500, 517)), t=0.0), seq([*range(16), 900], t=1.0)
    s2.add(cold2)
    s2.add(warm2)
    assert admit_all(s2) == [cold2, warm2]


def test_requests_sharing_an_uncached_prefix_wait_one_step_to_hit_it() -> None:
    s = make_sched(max_num_seqs=4, max_num_batched_tokens=64)
    doc = list(range(16))
    a, b, other = seq([*doc, 1]), seq([*doc, 2]), seq(list(range(700, 720)))
    for q in (a, b, other):
        s.add(q)
    first = s.schedule()
    assert first.seqs == [a, other]  # b would recompute the doc: it waits
    s.postprocess(first, [7, 7])
    second = s.schedule()
    assert b in second.seqs and b.num_computed_tokens == 16


def test_clustered_requests_are_admitted_together() -> None:
    def build(cluster: bool) -> tuple[Scheduler, list[Sequence]]:
        s = make_sched(max_num_seqs=1, max_num_batched_tokens=64)
        reqs = [seq(list(range(1000 * i, 1000 * i + 9)), t=float(i)) for i in range(1, 5)]
        if cluster:
            for q, c in zip(reqs, [0, 1, 0, 1], strict=True):
                q.cluster_id = c
        for q in reqs:
            s.add(q)
        return s, reqs

    s, (a, b, a2, b2) = build(cluster=True)
    assert admit_all(s) == [a, a2, b, b2]
    s, reqs = build(cluster=False)
    assert admit_all(s) == reqs  # clustering off: the plain (cache-aware) FCFS order


def test_cache_aware_pick_keeps_priority_first() -> None:
    s = make_sched("priority", max_num_seqs=1, max_num_batched_tokens=1024)
    computed(s.block_manager, seq(list(range(200))))
    short = seq(list(range(5000, 5010)), t=0.0)
    short.priority = 0
    warm_long = Sequence([*range(196), 1], SamplingParams(max_tokens=2), None, None, 0.0)
    s.add(warm_long)  # priority 1: a cached prefix does not let it pass priority 0
    s.add(short)
    assert admit_all(s)[0] is short
    assert warm_long.status == SequenceStatus.FINISHED


def test_leader_clusters_group_by_cosine() -> None:
    lc = LeaderClusters(threshold=0.9)
    a = lc.assign(torch.tensor([1.0, 0.0, 0.0]))
    assert lc.assign(torch.tensor([0.99, 0.05, 0.0])) == a
    b = lc.assign(torch.tensor([0.0, 1.0, 0.0]))
    assert b != a and lc.sizes == {a: 2, b: 1}


class _TextTokenizer:
    """Token ids -> the prompt text registered for them (the clusterer decodes prompts)."""

    def __init__(self) -> None:
        self.texts: dict[tuple[int, ...], str] = {}

    def decode(self, ids: list[int]) -> str:
        return self.texts[tuple(ids)]


def test_minilm_puts_same_template_prompts_in_one_cluster() -> None:
    pytest.importorskip("sentence_transformers")
    from engine.scheduling.clustering import Clusterer

    tok = _TextTokenizer()
    clusterer = Clusterer(tok, threshold=0.6)
    topics = {
        "volcano": "Volcanoes form where magma from the mantle reaches the surface; "
        "eruptions build cones of ash and lava.",
        "tax": "The quarterly tax filing lists revenue, deductible expenses and the VAT "
        "owed to the revenue service.",
    }
    questions = ["Summarize this document.", "What is the main point of this document?"]
    seqs = []
    for i, (topic, doc) in enumerate(topics.items()):
        for j, q in enumerate(questions):
            text = (
                f"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{doc}\n{q}<|im_end|>\n"
            )
            ids = [10 * i + j + 1]
            tok.texts[tuple(ids)] = text
            seqs.append((topic, Sequence(ids, SamplingParams())))
    try:
        ids = [clusterer.submit(s).result() for _, s in seqs]
        assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
        assert clusterer.stats()["embed_ms_per_request"] > 0
    finally:
        clusterer.close()


def test_engine_runs_without_sentence_transformers_when_clustering_is_off(
    tiny_llama: Path,
) -> None:
    code = (
        "import sys\n"
        "from engine import LLM, SamplingParams\n"
        f"llm = LLM({str(tiny_llama)!r}, block_size=4, num_kv_blocks=32)\n"
        "out = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=2))\n"
        "assert len(out[0].token_ids) == 2\n"
        "assert 'sentence_transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
