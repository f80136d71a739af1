"""`bench capacity`'s sweep: seeded think times, and a system whose processes are its stages."""

from __future__ import annotations

import os
import random

from bench.capacity import cpu, sweep


def test_think_times_are_seeded_and_around_the_mean() -> None:
    seed = random.Random(3).random()
    first, again = sweep.think_times(seed, 2.0), sweep.think_times(seed, 2.0)
    times = [first() for _ in range(50)]
    assert times == [again() for _ in range(50)]
    assert all(1.0 <= t <= 3.0 for t in times)


def test_a_peer_without_thread_names_is_counted_by_process() -> None:
    pid = os.getpid()
    system = sweep.System("pipecat+ws://x", [pid], False, {pid: "pipeline"})
    seconds = system.cpu()
    assert list(seconds) == ["pipeline"] and seconds["pipeline"] > 0
    shares = cpu.stage_shares({"pipeline": 0.0}, {"pipeline": 2.0}, system.stages())
    assert shares == {"server_cpu_s": 2.0, "share": {"pipeline": 1.0, "other": 0.0}}
