"""The step-time budget: the cost model (synthetic times, no real clock) and the
scheduler keeping steps under max_step_ms while high-priority work waits (the step
clock that measures the steps: tests/engine/stats)."""

from __future__ import annotations

import itertools
import random

import pytest

from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.sampling_params import SamplingParams
from engine.scheduler import Scheduler
from engine.scheduling.step_budget import MIN_CHUNK
from engine.scheduling.step_cost_model import StepCostModel, StepWork
from engine.sequence import Sequence

TRUE = (4.0, 0.5, 0.3, 0.02)  # ms: per step, per token, per decode, per 1000 pairs
_starts = itertools.count(1)


def true_ms(work: StepWork) -> float:
    return sum(c * f for c, f in zip(TRUE, work.features(), strict=True))


def fitted(coef: tuple[float, ...] = TRUE) -> StepCostModel:
    model = StepCostModel()
    model.coef = coef
    return model


def test_cost_model_learns_step_times_from_measurements() -> None:
    rng = random.Random(0)
    model = StepCostModel()
    for _ in range(200):
        work = StepWork()
        for _ in range(rng.randint(0, 8)):
            work = work.plus_chunk(1, rng.randint(1, 2000))  # decodes
        if rng.random() < 0.6:
            work = work.plus_chunk(rng.randint(2, 512), rng.randint(0, 1500))  # a chunk
        if work.tokens:
            model.observe(work, true_ms(work))
    assert model.num_samples > 100
    for got, want in zip(model.coef, TRUE, strict=True):
        assert got == pytest.approx(want, rel=0.05, abs=0.01)
    probe = StepWork().plus_chunk(1, 700).plus_chunk(300, 100)
    assert model.predict(probe) == pytest.approx(true_ms(probe), rel=0.02)


def test_max_chunk_is_the_largest_chunk_under_the_limit() -> None:
    model = fitted()
    base = StepWork().plus_chunk(1, 500).plus_chunk(1, 900)  # two decodes
    for start, limit in [(0, 50.0), (1000, 50.0), (0, 150.0), (5000, 150.0)]:
        n = model.max_chunk(base, start, limit, most=10_000)
        assert n > 0
        assert model.predict(base.plus_chunk(n, start)) <= limit
        assert model.predict(base.plus_chunk(n + 1, start)) > limit
    assert model.max_chunk(base, 0, 1.0, most=10_000) == 0  # the decodes alone are over
    assert model.max_chunk(base, 0, 1e9, most=77) == 77


def test_on_a_noisy_machine_capped_chunks_rarely_overrun() -> None:
    """Steps vary +-20% around the true cost: a chunk sized on the fitted mean alone
    overruns about half the time; scaled by ``safety`` it seldom does."""
    rng = random.Random(1)
    model = StepCostModel()

    def measured(work: StepWork) -> float:
        return true_ms(work) * rng.uniform(0.8, 1.2)

    for _ in range(300):
        work = StepWork().plus_chunk(1, rng.randint(1, 500)).plus_chunk(rng.randint(2, 512), 0)
        model.observe(work, measured(work))
    assert 1.1 < model.safety < 1.6
    base = StepWork().plus_chunk(1, 300)
    over = {"safety": 0, "mean": 0}
    for name in over:
        if name == "mean":
            model.safety = 1.0
        for _ in range(200):
            n = model.max_chunk(base, 0, 100.0, most=10_000)
            over[name] += measured(base.plus_chunk(n, 0)) > 100.0
    assert over["safety"] <= 10  # of 200
    assert over["mean"] >= 60


def make(max_step_ms: float | None = 50.0, **cfg) -> Scheduler:  # type: ignore[no-untyped-def]
    config = EngineConfig(
        model="unused", block_size=4, max_num_batched_tokens=2048, max_step_ms=max_step_ms, **cfg
    )
    s = Scheduler(config, BlockManager(4096, 4), max_model_len=100_000)
    s.cost_model = fitted()
    return s


def request(n: int, priority: int | None = None, max_tokens: int = 2) -> Sequence:
    start = next(_starts) * 100_000
    return Sequence(
        list(range(start, start + n)), SamplingParams(max_tokens=max_tokens), None, priority
    )


def step(s: Scheduler) -> tuple[list[Sequence], list[int], float]:
    batch = s.schedule()
    sampled = [
        7 if seq.num_computed_tokens + n == seq.num_tokens else None
        for seq, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
    ]
    s.postprocess(batch, sampled)
    return batch.seqs, batch.num_new_tokens, batch.predicted_ms


def test_long_prefills_are_cut_to_the_step_time_and_a_short_request_starts_next_step() -> None:
    s = make(50.0)
    longs = [request(1800) for _ in range(4)]  # default priority 14: low
    for seq in longs:
        s.add(seq)
    for _ in range(3):
        _, tokens, predicted = step(s)
        assert predicted <= 50.0 and sum(tokens) < 2048  # the token budget alone: 2048
    short = request(40)  # default priority 0: high
    s.add(short)
    seqs, tokens, predicted = step(s)
    assert short in seqs and tokens[seqs.index(short)] == 40  # its whole prompt, at once
    assert short.num_completion_tokens == 1  # the first token after one step
    assert predicted <= 50.0
    while s.has_unfinished():
        _, tokens, predicted = step(s)
        # Every step under the limit, except a chunk the budget may not cut further.
        assert predicted <= 50.0 or max(tokens) <= MIN_CHUNK
    assert all(seq.is_finished for seq in [*longs, short])


def test_unbounded_without_a_limit_and_in_latency_mode_until_needed() -> None:
    s = make(None)
    s.add(request(1800))
    full = 2048 - s.reserve_tokens  # low-priority work stays out of the token reserve
    assert step(s)[1] == [full]  # one big chunk: the token budget alone decides
    s = make(50.0, step_budget_mode="latency")
    s.add(request(1800))
    assert step(s)[1] == [full]  # nothing latency-sensitive waits: full chunks
    s.set_latency_sensitive(True)  # e.g. a voice session opened
    assert step(s)[2] <= 50.0
