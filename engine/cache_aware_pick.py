"""The cache-aware pick: which waiting request the scheduler admits next.

See ``Scheduler``: among the first PICK_WINDOW waiting requests of the head's priority,
the one with the longest cached prefix, then one of the cluster admitted last; a
request whose next uncached block a running prefill is computing waits for it and hits
it (co-scheduling: a shared prefix is computed once, by its first request). The head
is passed over at most MAX_SKIPS times.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.block_manager import BlockManager
from engine.sequence import Sequence

PICK_WINDOW = 16  # waiting requests a cache-aware pick looks at
MAX_SKIPS = 8  # a request passed over this often is admitted next, cache or not


def cache_aware_pick(
    waiting: list[Sequence],
    bm: BlockManager,
    policy: str,
    cache_aware: bool,
    is_high: Callable[[Sequence], bool],
    last_cluster: int | None,
    pending_blocks: set[int],
    high_only: bool = False,
) -> Sequence | None:
    """The waiting request to admit next (of ``waiting``, in queue order); None when
    ``high_only`` and none is high-priority, or when every candidate waits for a block
    in ``pending_blocks`` (being computed by a running prefill)."""
    queue = waiting
    if high_only:
        queue = [s for s in waiting[: 4 * PICK_WINDOW] if is_high(s)]
        if not queue:
            return None
    head = queue[0]
    candidates = [head]
    if cache_aware and policy != "static" and head.num_skips < MAX_SKIPS:
        candidates = [
            s for s in queue[:PICK_WINDOW] if policy != "priority" or s.priority == head.priority
        ]
    best: Sequence | None = None
    best_score = (-1, False)
    for seq in candidates:
        # Another request computes its next block now: hit it later. Not for high-priority
        # requests: waiting on a lower-priority prefill (cut to the low budget) would
        # invert their priority; they compute their own copy with the reserve.
        if pending_blocks and not is_high(seq) and bm.next_uncached_block(seq) in pending_blocks:
            continue
        same = last_cluster is not None and seq.cluster_id == last_cluster
        score = (bm.num_cached_tokens(seq) if len(candidates) > 1 else 0, same)
        if score > best_score:
            best, best_score = seq, score
    if best is not None and best is not head:
        head.num_skips += 1
    return best
