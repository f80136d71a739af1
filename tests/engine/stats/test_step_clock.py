"""StepClock: measured against predicted step times, and where the wall time goes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine import SamplingParams
from engine.llm_engine import LLMEngine
from engine.stats.step_clock import StepClock
from tests.engine.scheduling.test_step_budget import make, request


def test_step_clock_records_measured_and_predicted_step_times() -> None:
    now = [0.0]
    clock = StepClock(now=lambda: now[0])
    s = make(50.0)
    s.add(request(100))
    batch = s.schedule()
    clock.record_step(batch, 0.080, 50.0)  # 80 ms measured: over the 50 ms limit
    reading = clock.reading()
    assert reading.steps.last_ms == pytest.approx(80.0)
    assert reading.steps.last_predicted_ms == pytest.approx(batch.predicted_ms)
    assert reading.steps.over_limit == 1 and reading.steps.count == 1
    now[0] = 10.0
    assert reading.shares(10.0)["idle"] == pytest.approx(1.0)


def test_idle_shares_tell_waiting_from_empty(tiny_llama: Path) -> None:
    engine = LLMEngine(
        str(tiny_llama),
        block_size=4,
        num_kv_blocks=24,
        scheduling_policy="static",
        static_batch_timeout_s=1e6,
    )
    time.sleep(0.02)  # nothing to do
    engine.add_request([5] * 8, SamplingParams(max_tokens=2), "r")
    engine.step()  # a static batch of one waits to fill: nothing scheduled
    time.sleep(0.02)
    stats = engine.stats()
    assert stats.idle_empty_share > 0 and stats.idle_waiting_share > 0
    assert stats.busy_share == 0
    assert abs(stats.busy_share + stats.idle_waiting_share + stats.idle_empty_share - 1) < 0.05
