"""Statistics shared by benches that report raw figures: the nearest-rank percentile.

(bench voice's stats.percentile interpolates between ranks, as numpy does; the benches
that use this one reported nearest ranks from the start, so their figures stay so.)"""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float | None:
    """The value at the nearest rank to the q-th percentile (0..100), rounded to 4
    places; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 4)
