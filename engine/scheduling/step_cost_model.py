"""StepCostModel: a step's time predicted from its work, fitted online to measured steps.

The "predictive" part of predictive preemption (see Scheduler): knowing what a step
will cost before running it, the scheduler can cut prefill chunks so that no step
runs past ``max_step_ms`` while latency-sensitive work waits. The same idea as
Sarathi-Serve's stall-free batching with a token budget derived from a latency target
(Agrawal et al., 2024), with the budget learnt here instead of profiled offline.

    ms = intercept + per_token * tokens + per_decode * decodes + per_attention * pairs

``tokens``: tokens computed (prefill chunks and decodes); ``pairs``: query-key pairs
of attention, sum over sequences of ``n * (start + n)`` (in thousands), for a chunk of
n tokens after ``start`` cached ones. The fit is ridge regression towards a prior, over
exponentially decayed samples (recent steps count most: machine load changes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# CPU priors (ms), SmolLM2-135M on 2 cores: they only matter for the first few steps.
PRIOR = (5.0, 1.0, 0.5, 0.02)
FEATURES = len(PRIOR)


@dataclass(frozen=True)
class StepWork:
    """What a step computes, the cost model's input."""

    tokens: int = 0
    decodes: int = 0
    pairs_k: float = 0.0  # attention query-key pairs / 1000

    def features(self) -> list[float]:
        return [1.0, float(self.tokens), float(self.decodes), self.pairs_k]

    def plus_chunk(self, n: int, start: int) -> StepWork:
        """This work and one more chunk of n tokens after ``start`` cached ones."""
        return StepWork(
            self.tokens + n, self.decodes + (n == 1), self.pairs_k + n * (start + n) / 1000
        )


class StepCostModel:
    """Online ridge regression of step milliseconds on StepWork features.

    Plain Python floats: the small normal equations solve faster this way than through
    a dozen torch calls on tiny tensors, and they are solved every step.
    """

    def __init__(
        self, prior: tuple[float, ...] = PRIOR, decay: float = 0.97, ridge: float = 1.0
    ) -> None:
        self.decay, self.ridge = decay, ridge
        self.prior = tuple(float(p) for p in prior)
        self.xtx = [[0.0] * FEATURES for _ in range(FEATURES)]
        self.xty = [0.0] * FEATURES
        self.coef: tuple[float, ...] = self.prior
        self.num_samples = 0
        # measured / predicted (before each refit: out of sample), mean and mean
        # deviation; ``safety`` = mean + 2 deviations scales the budget's predictions,
        # so a noisy machine's steps overrun rarely instead of about half the time.
        self.ratio_mean, self.ratio_dev = 1.0, 0.0
        self.safety = 1.0

    def predict(self, work: StepWork) -> float:
        """Predicted milliseconds of a step doing ``work``."""
        return sum(a * b for a, b in zip(self.coef, work.features(), strict=True))

    def observe(self, work: StepWork, ms: float) -> None:
        """Add a measured step and refit."""
        x, d = work.features(), self.decay
        if self.num_samples >= 8:  # the first fits are the prior's, not the machine's
            # clipped: one stalled step (a GC pause, a page fault) must not halve the
            # chunks for many steps after
            ratio = min(3.0, max(0.5, ms / max(self.predict(work), 1e-3)))
            self.ratio_dev = d * self.ratio_dev + (1 - d) * abs(ratio - self.ratio_mean)
            self.ratio_mean = d * self.ratio_mean + (1 - d) * ratio
            self.safety = min(2.0, max(1.0, self.ratio_mean + 2 * self.ratio_dev))
        for i, row in enumerate(self.xtx):
            for j in range(FEATURES):
                row[j] = row[j] * d + x[i] * x[j]
            self.xty[i] = self.xty[i] * d + x[i] * ms
        # Scale-free ridge: each feature's penalty follows its own magnitude in the data.
        scale = [max(self.xtx[i][i], 1e-9) * 1e-3 * self.ridge + 1e-6 for i in range(FEATURES)]
        a = [
            [v + (scale[i] if i == j else 0.0) for j, v in enumerate(row)]
            for i, row in enumerate(self.xtx)
        ]
        b = [self.xty[i] + scale[i] * self.prior[i] for i in range(FEATURES)]
        # no work is free, none saves time
        self.coef = tuple(max(0.0, c) for c in _solve(a, b))
        self.num_samples += 1

    def max_chunk(self, work: StepWork, start: int, limit_ms: float, most: int) -> int:
        """The largest chunk n <= most (after ``start`` cached tokens) such that
        ``work`` plus the chunk is predicted to take at most ``limit_ms`` (predictions
        scaled by ``safety``); 0 if none."""
        limit_ms /= self.safety
        left = limit_ms - self.predict(work)
        _, per_token, _, per_pair = self.coef
        per_pair /= 1000  # the model counts pairs in thousands
        if left <= 0:
            return 0
        # per_pair * n^2 + (per_token + per_pair * start) * n - left = 0
        b = per_token + per_pair * start
        if per_pair <= 1e-12:
            n = left / b if b > 0 else float(most)
        else:
            n = (-b + math.sqrt(b * b + 4 * per_pair * left)) / (2 * per_pair)
        return max(0, min(most, int(n)))


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b: Gaussian elimination with partial pivoting (a is positive
    definite here: the ridge keeps it so), in place on a and b."""
    n = len(b)
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        b[col], b[pivot] = b[pivot], b[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            if f:
                for c in range(col, n):
                    a[r][c] -= f * a[col][c]
                b[r] -= f * b[col]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (b[r] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x
