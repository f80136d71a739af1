"""BlockManager: reference counts, chained-hash prefix cache, LRU reuse, the free invariant."""

from __future__ import annotations

from engine.block_manager import BlockManager
from engine.sampling_params import SamplingParams
from engine.sequence import Sequence


def seq(tokens: list[int]) -> Sequence:
    return Sequence(tokens, SamplingParams(max_tokens=4))


def compute(bm: BlockManager, s: Sequence) -> None:
    """Pretend the model computed every token of s (what the scheduler does after a step)."""
    s.num_computed_tokens = s.num_tokens
    bm.cache_computed_blocks(s)


def test_allocate_and_free_returns_every_block() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    a = seq(list(range(10)))
    assert bm.allocate(a)
    assert len(a.block_table) == 3 and bm.num_free_blocks == 5
    bm.deallocate(a)
    assert bm.num_free_blocks == 8 and a.block_table == []


def test_allocation_fails_without_side_effects_when_pool_is_short() -> None:
    bm = BlockManager(num_blocks=2, block_size=4)
    assert not bm.allocate(seq(list(range(9))))  # needs 3 blocks
    assert bm.num_free_blocks == 2


def test_shared_prefix_reuses_blocks_and_counts_references() -> None:
    bm = BlockManager(num_blocks=16, block_size=4)
    a = seq(list(range(12)))
    assert bm.allocate(a)
    compute(bm, a)
    b = seq([*range(8), 100, 101, 102])
    assert bm.allocate(b)
    assert b.block_table[:2] == a.block_table[:2]  # two full blocks shared
    assert b.num_computed_tokens == 8
    assert bm.blocks[a.block_table[0]].ref_count == 2
    assert bm.prefix_cache_hits == 8
    bm.deallocate(a)
    assert bm.blocks[b.block_table[0]].ref_count == 1
    bm.deallocate(b)
    assert bm.num_free_blocks == 16


def test_last_token_is_never_served_from_cache() -> None:
    bm = BlockManager(num_blocks=16, block_size=4)
    a = seq(list(range(8)))
    assert bm.allocate(a)
    compute(bm, a)
    b = seq(list(range(8)))  # identical prompt, a multiple of the block size
    assert bm.allocate(b)
    assert b.num_computed_tokens == 4  # the last block is recomputed, in a fresh block
    assert b.block_table[1] != a.block_table[1]


def test_chained_hash_needs_equal_parents() -> None:
    bm = BlockManager(num_blocks=16, block_size=4)
    a = seq([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert bm.allocate(a)
    compute(bm, a)
    b = seq([0, 0, 0, 0, 5, 6, 7, 8, 9])  # same second block, different first block
    assert bm.allocate(b)
    assert b.num_computed_tokens == 0


def test_freed_blocks_stay_cached_until_needed_lru() -> None:
    bm = BlockManager(num_blocks=4, block_size=4)
    a = seq(list(range(9)))
    assert bm.allocate(a)
    compute(bm, a)
    bm.deallocate(a)
    assert bm.num_free_blocks == 4  # cached blocks count as free
    again = seq(list(range(9)))
    assert bm.allocate(again)
    assert again.num_computed_tokens == 8
    bm.deallocate(again)
    # A different request that needs the whole pool evicts the cache.
    big = seq([50 + i for i in range(16)])
    assert bm.allocate(big)
    bm.deallocate(big)
    assert not bm.hash_to_block or all(
        bm.blocks[b].token_ids[0] >= 50 for b in bm.hash_to_block.values()
    )
    late = seq(list(range(9)))
    assert bm.allocate(late)
    assert late.num_computed_tokens == 0
    bm.deallocate(late)
    assert bm.num_free_blocks == 4


def test_blocks_registered_only_once_computed() -> None:
    bm = BlockManager(num_blocks=16, block_size=4)
    a = seq(list(range(12)))
    assert bm.allocate(a)
    a.num_computed_tokens = 4  # a chunked prefill that computed one block so far
    bm.cache_computed_blocks(a)
    b = seq(list(range(12)))
    assert bm.allocate(b)
    assert b.num_computed_tokens == 4


def test_prefix_caching_disabled() -> None:
    bm = BlockManager(num_blocks=16, block_size=4, enable_prefix_caching=False)
    a = seq(list(range(12)))
    assert bm.allocate(a)
    compute(bm, a)
    b = seq(list(range(12)))
    assert bm.allocate(b)
    assert b.num_computed_tokens == 0 and not bm.hash_to_block


def test_free_all_resets_pool() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    for n in (5, 9):
        assert bm.allocate(seq(list(range(n))))
    bm.free_all()
    assert bm.num_free_blocks == 8 and not bm.hash_to_block


def test_reset_stats_zeroes_counters_and_the_peak_starts_from_now() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    a = seq(list(range(12)))
    assert bm.allocate(a)
    compute(bm, a)
    bm.deallocate(a)
    b = seq(list(range(12)))
    assert bm.allocate(b) and bm.prefix_cache_hits == 8 and bm.peak_blocks_used == 3
    bm.deallocate(b)
    bm.reset_stats()
    assert (bm.prefix_cache_queries, bm.prefix_cache_hits, bm.num_retained) == (0, 0, 0)
    assert bm.peak_blocks_used == 0 and bm.hash_to_block  # the cache itself stays


def test_switching_the_prefix_cache_empties_the_pool_only_on_a_change() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    a = seq(list(range(12)))
    assert bm.allocate(a)
    compute(bm, a)
    bm.deallocate(a)
    bm.set_prefix_caching(True)  # no change: the cache stays
    assert bm.hash_to_block
    bm.set_prefix_caching(False)
    assert not bm.enable_prefix_caching and not bm.hash_to_block and bm.num_free_blocks == 8
