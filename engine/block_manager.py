"""BlockManager: the pool of KV blocks, reference counts and the prefix cache."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

from engine.sequence import Sequence

MAX_BLOCK_CLUSTERS = 8  # clusters remembered per block (the most recent ones)


@dataclass
class Block:
    """One KV block: ``block_size`` token slots in every layer's cache."""

    block_id: int
    ref_count: int = 0
    hash: int | None = None  # set once the block is full, computed and registered
    token_ids: tuple[int, ...] = ()  # the tokens behind ``hash``, to confirm a hit
    parent: object = None  # the parent hash (the salt for a first block), likewise
    clusters: tuple[int, ...] = ()  # clusters of the last requests that used it


class BlockManager:
    """Hands out KV blocks to sequences and shares equal prefixes between them.

    A full block is identified by a chained hash, hash(parent hash, its tokens), so a
    hit on block i implies the whole prefix up to i matches. A block is registered only
    after its KV has been computed: a sequence in the middle of a chunked prefill never
    lends half-written blocks. Freed blocks keep their contents and stay findable until
    the pool needs them (least recently freed first), so unreferenced cached blocks
    count as free. A request's ``cache_salt`` roots its chain (it is the first block's
    parent), so requests with different salts (tenants) never share a block.

    Cluster-aware retention: ``set_cluster_demand`` (the scheduler) says how much
    each prompt cluster is still wanted (waiting members, recent arrivals). When a
    block must be evicted and the least recently freed one holds KV of a wanted
    cluster, the least wanted cached block among the next ``RETENTION_SCAN`` free ones
    goes instead. It only chooses which free block is reused, never whether: every
    free block still counts as free, so retention can never hold up an admission.
    """

    RETENTION_SCAN = 1024  # free blocks looked at for a less wanted one (bounds the cost)

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True):
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free_blocks: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self.hash_to_block: dict[int, int] = {}
        self.prefix_cache_queries = 0  # prompt tokens looked up in the prefix cache
        self.prefix_cache_hits = 0  # of which found there
        self.peak_blocks_used = 0
        self.cluster_demand: dict[int, float] = {}
        self.num_retained = 0  # evictions that spared a wanted cluster's block

    def set_cluster_demand(self, demand: dict[int, float]) -> None:
        """How much each cluster is still wanted now (ClusterDemand.of); {}: plain LRU."""
        self.cluster_demand = demand

    def set_prefix_caching(self, on: bool) -> None:
        """Turn the prefix cache on or off; a change empties the pool (nothing may be live)."""
        if on != self.enable_prefix_caching:
            self.free_all()
            self.enable_prefix_caching = on

    def reset_stats(self) -> None:
        """Zero the prefix-cache and retention counters; the peak starts from now."""
        self.prefix_cache_queries = self.prefix_cache_hits = self.num_retained = 0
        self.peak_blocks_used = self.num_blocks - self.num_free_blocks

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free_blocks(self) -> int:
        return len(self.free_blocks)

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def _block_tokens(self, seq: Sequence, i: int) -> tuple[int, ...]:
        return tuple(seq.token_ids[i * self.block_size : (i + 1) * self.block_size])

    def _take_free(self, block_id: int) -> int:
        """Take a specific free block: a cache hit, or a victim to be overwritten."""
        del self.free_blocks[block_id]
        self.blocks[block_id].ref_count = 1
        self.peak_blocks_used = max(self.peak_blocks_used, self.num_blocks - self.num_free_blocks)
        return block_id

    def _take_new(self, n: int) -> list[int]:
        """Take ``n`` free blocks to write new KV into, evicting what they cached."""
        taken = self._victims(n)
        for block_id in taken:
            block = self.blocks[block_id]
            if block.hash is not None and self.hash_to_block.get(block.hash) == block_id:
                del self.hash_to_block[block.hash]  # evicted from the prefix cache
            block.hash, block.token_ids, block.parent, block.clusters = None, (), None, ()
            self._take_free(block_id)
        return taken

    def _demand(self, block_id: int) -> float:
        """How much the clusters that used this block still want it. A block shared by
        many clusters (a system prompt at the root of every chain) sums their demand:
        evicting it would cut every chain that starts with it."""
        block = self.blocks[block_id]
        if block.hash is None or not block.clusters:
            return 0.0  # nothing findable in it, or no cluster known to want it
        return sum(self.cluster_demand.get(c, 0.0) for c in block.clusters)

    def _victims(self, n: int) -> list[int]:
        """The ``n`` free blocks to reuse: the least recently freed, except that blocks
        wanted by a cluster go last (least wanted first; LRU among equals). One pass
        over at most RETENTION_SCAN free blocks per allocation."""
        if n <= 0 or not self.cluster_demand:
            return list(itertools.islice(self.free_blocks, max(n, 0)))
        window = list(itertools.islice(self.free_blocks, max(n, self.RETENTION_SCAN)))
        demands = [self._demand(b) for b in window]
        order = sorted(range(len(window)), key=demands.__getitem__)  # stable: LRU ties
        chosen = [window[i] for i in order[:n]]
        self.num_retained += sum(1 for i in order[:n] if i >= n)
        return chosen

    def _cached_prefix(self, seq: Sequence) -> tuple[list[int], list[int]]:
        """The leading blocks of the sequence found in the cache: (block ids, hashes)."""
        hits: list[int] = []
        hashes: list[int] = []
        if not self.enable_prefix_caching:
            return hits, hashes
        # Only blocks strictly before the last token can hit: the last token is always
        # computed (its logits are needed) and must not be written into a shared block.
        parent: object = seq.cache_salt
        for i in range((seq.num_tokens - 1) // self.block_size):
            tokens = self._block_tokens(seq, i)
            h = hash((parent, tokens))
            block_id = self.hash_to_block.get(h)
            if block_id is None:
                break
            block = self.blocks[block_id]
            if block.token_ids != tokens or block.parent != parent:
                break  # a hash collision: not the same prefix
            hits.append(block_id)
            hashes.append(h)
            parent = h
        return hits, hashes

    def num_cached_tokens(self, seq: Sequence) -> int:
        """Tokens of the sequence's prefix that the cache holds now (allocates nothing)."""
        return len(self._cached_prefix(seq)[0]) * self.block_size

    def next_uncached_block(self, seq: Sequence) -> int | None:
        """Hash of the first block of the sequence's prompt that could be shared but is not
        cached (None when every shareable block is)."""
        if not self.enable_prefix_caching:
            return None
        hits, hashes = self._cached_prefix(seq)
        i = len(hits)
        if i >= (seq.num_tokens - 1) // self.block_size:
            return None
        parent = hashes[-1] if hashes else seq.cache_salt
        return hash((parent, self._block_tokens(seq, i)))

    def pending_blocks(self, seq: Sequence) -> set[int]:
        """Hashes of the shareable blocks a running prefill has still to compute: another
        request that needs one of them next waits and hits it (it is computed once)."""
        shareable = (seq.num_prompt_tokens - 1) // self.block_size
        if not self.enable_prefix_caching or len(seq.block_hashes) >= shareable:
            return set()
        parent = seq.block_hashes[-1] if seq.block_hashes else seq.cache_salt
        pending = set()
        for i in range(len(seq.block_hashes), shareable):
            parent = hash((parent, self._block_tokens(seq, i)))
            pending.add(parent)
        return pending

    def allocate(self, seq: Sequence, reserve: int = 0) -> bool:
        """Give a waiting sequence blocks for all its tokens, reusing cached prefix blocks.

        Returns False, changing nothing, when the pool cannot hold it now while keeping
        ``reserve`` blocks free. Sets ``seq.num_computed_tokens`` to the number of tokens
        found in the cache.
        """
        assert not seq.block_table
        hits, hashes = self._cached_prefix(seq)
        num_new = self.blocks_needed(seq.num_tokens) - len(hits)
        num_hits_free = sum(1 for b in hits if self.blocks[b].ref_count == 0)
        if self.num_free_blocks - num_hits_free - num_new < reserve:
            return False
        for block_id in hits:
            if self.blocks[block_id].ref_count == 0:
                self._take_free(block_id)
            else:
                self.blocks[block_id].ref_count += 1
        seq.block_table = hits + self._take_new(num_new)
        seq.block_hashes = hashes
        seq.num_computed_tokens = len(hits) * self.block_size
        if seq.num_preemptions == 0:  # count each prompt once, not every recompute
            seq.num_cached_tokens = seq.num_computed_tokens
            if self.enable_prefix_caching:
                self.prefix_cache_queries += seq.num_tokens
                self.prefix_cache_hits += seq.num_computed_tokens
        return True

    def ensure_slots(self, seq: Sequence, num_tokens: int) -> bool:
        """Grow the block table to hold ``num_tokens`` tokens; False if the pool is short."""
        missing = self.blocks_needed(num_tokens) - len(seq.block_table)
        if missing > self.num_free_blocks:
            return False
        seq.block_table.extend(self._take_new(missing))
        return True

    def trim(self, seq: Sequence) -> None:
        """Free the blocks past the sequence's tokens (slots of rejected draft tokens).
        They hold no registered KV, so they go first in line to be reused."""
        keep = self.blocks_needed(seq.num_tokens)
        for block_id in reversed(seq.block_table[keep:]):
            block = self.blocks[block_id]
            block.ref_count -= 1
            assert block.ref_count == 0 and block.hash is None, f"block {block_id} shared"
            self.free_blocks[block_id] = None
            self.free_blocks.move_to_end(block_id, last=False)
        del seq.block_table[keep:]

    def cache_computed_blocks(self, seq: Sequence) -> None:
        """Register the sequence's newly full and computed blocks in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        num_full = seq.num_computed_tokens // self.block_size
        for i in range(len(seq.block_hashes), num_full):
            tokens = self._block_tokens(seq, i)
            parent = seq.block_hashes[-1] if seq.block_hashes else seq.cache_salt
            h = hash((parent, tokens))
            seq.block_hashes.append(h)
            block = self.blocks[seq.block_table[i]]
            if block.hash is None and h not in self.hash_to_block:
                block.hash, block.token_ids, block.parent = h, tokens, parent
                self.hash_to_block[h] = block.block_id

    def deallocate(self, seq: Sequence) -> None:
        """Drop the sequence's references; blocks nobody uses become free (still cached)."""
        # Tail first: the end of a chain is evicted before its prefix.
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            if seq.cluster_id is not None and seq.cluster_id not in block.clusters:
                block.clusters = (*block.clusters[-(MAX_BLOCK_CLUSTERS - 1) :], seq.cluster_id)
            block.ref_count -= 1
            assert block.ref_count >= 0, f"block {block_id} freed twice"
            if block.ref_count == 0:
                self.free_blocks[block_id] = None
        seq.block_table = []
        seq.block_hashes = []
        seq.num_computed_tokens = 0

    def free_all(self) -> None:
        """Forget every allocation and the prefix cache: the whole pool is free."""
        self.blocks = [Block(i) for i in range(self.num_blocks)]
        self.free_blocks = OrderedDict.fromkeys(range(self.num_blocks))
        self.hash_to_block.clear()
