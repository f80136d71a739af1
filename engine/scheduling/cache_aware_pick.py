"""The cache-aware pick: which waiting request the scheduler admits next.

With ``cache_aware_scheduling`` (not in "static"): among the first PICK_WINDOW waiting
requests of the head's priority ("fcfs": all of them), the one with the longest cached
prefix, then one of the cluster admitted last (prompt clustering); a request whose next
uncached block a running prefill is computing waits for it and hits it (co-scheduling:
a shared prefix is computed once, by its first request). The head is passed over at
most MAX_SKIPS times, so these picks only add a bounded delay to the queue order's
promise (see SchedulingPolicy).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.block_manager import BlockManager
from engine.sequence import Sequence

PICK_WINDOW = 16  # waiting requests a cache-aware pick looks at
MAX_SKIPS = 8  # a request passed over this often is admitted next, cache or not


def cache_aware_pick(
    waiting: list[Sequence],
    *,
    block_manager: BlockManager,
    policy: str,
    cache_aware: bool,
    is_high: Callable[[Sequence], bool],
    last_cluster: int | None,
    pending_blocks: dict[int, int],
    high_only: bool = False,
) -> Sequence | None:
    """The waiting request to admit next (of ``waiting``, in queue order); None when
    ``high_only`` and none is high-priority, or when every candidate waits for a block
    in ``pending_blocks`` (hash -> the best priority of the running prefills computing
    it)."""
    bm = block_manager
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
        if pending_blocks and _waits(seq, bm.next_uncached_block(seq), pending_blocks, policy):
            continue  # another request computes its next block now: hit it later
        same = last_cluster is not None and seq.cluster_id == last_cluster
        score = (bm.num_cached_tokens(seq) if len(candidates) > 1 else 0, same)
        if score > best_score:
            best, best_score = seq, score
    if best is not None and best is not head:
        head.num_skips += 1
    return best


def _waits(seq: Sequence, block: int | None, pending: dict[int, int], policy: str) -> bool:
    """Does ``seq`` wait for ``block`` to be computed by a running prefill? Not behind a
    prefill of lower priority (cut to the low budget, waiting would invert the
    priorities): a more urgent request computes its own copy."""
    if block is None or block not in pending:
        return False
    return policy != "priority" or pending[block] <= seq.priority


def pending_blocks(
    bm: BlockManager, running: list[Sequence], known: dict[int, int] | None = None
) -> dict[int, int]:
    """Block hash -> the best priority among the ``running`` prefills computing it
    (merged with ``known``)."""
    pending = dict(known or {})
    for seq in running:
        for h in bm.pending_blocks(seq):
            pending[h] = min(pending.get(h, seq.priority), seq.priority)
    return pending
