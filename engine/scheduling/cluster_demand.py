"""ClusterDemand: how much each prompt cluster's KV is still wanted, for retention.

LRU eviction knows only when a block was last used. A cluster knows who comes next:
the requests of a cluster that are waiting will hit its blocks once admitted, and a
cluster that many requests finished in lately (a popular document, a busy system
prompt) is likely to be asked again. The demand of a cluster is

    WAITING_WEIGHT * waiting members + members among the last RECENT_FINISHES finished

(finishes older than RECENT_S drop out), and the KV pool evicts blocks of the least
wanted clusters first (BlockManager): known future reuse first, then popularity.

Why a count of the last RECENT_FINISHES finishes: under a skewed popularity, evicting
the least frequently used beats evicting the least recently used once the frequency
estimate has enough history. In a replay of Zipf-distributed requests over a few
documents into a cache too small for all of them, frequency beat LRU, by more the
longer its window, with most of the gain reached within a few dozen requests.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

from engine.sequence import Sequence

RECENT_FINISHES = 64
RECENT_S = 120.0  # popularity changes: a finish this old says nothing any more
WAITING_WEIGHT = 100.0  # a waiting member is a hit to come, a finish only a likelihood


class ClusterDemand:
    """Counts of waiting and recently finished members per cluster (engine thread)."""

    def __init__(self) -> None:
        self._finished: deque[tuple[float, int]] = deque(maxlen=RECENT_FINISHES)

    def finished(self, seq: Sequence) -> None:
        if seq.cluster_id is not None:
            self._finished.append((time.monotonic(), seq.cluster_id))

    def of(self, waiting: list[Sequence], now: float | None = None) -> dict[int, float]:
        """cluster id -> demand; only clusters with some demand appear."""
        now = time.monotonic() if now is None else now
        while self._finished and now - self._finished[0][0] > RECENT_S:
            self._finished.popleft()
        demand: defaultdict[int, float] = defaultdict(float)
        for _, cluster in self._finished:
            demand[cluster] += 1.0
        for seq in waiting:
            if seq.cluster_id is not None:
                demand[seq.cluster_id] += WAITING_WEIGHT
        return dict(demand)
