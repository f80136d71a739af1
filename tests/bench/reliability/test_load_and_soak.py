"""`r1voice bench load` and `bench soak` at a small size, against a real `r1voice serve`
subprocess: the invariants of the reliability figures hold (no 5xx, no normal request
failed, every hostile request refused with a 4xx, SIGTERM loses nothing and exits 0,
nothing left behind after misbehaving sessions). Timing targets are the benches' own
report (RELIABILITY.md), never asserted here."""

from __future__ import annotations

import argparse

import pytest

from app.cli import build_parser
from bench.reliability import load, soak


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["bench", *argv])


@pytest.mark.timeout(600)
def test_load_hostile_requests_beside_normal_ones_then_sigterm() -> None:
    args = parsed(
        "load", "--quick", "--rate", "2", "--duration", "8",
        "--adversarial-share", "0.5", "--drain-turns", "3",
    )  # fmt: skip
    result = load.run(args)
    overload, targets = result["overload"], result["targets"]
    hostile = sum(n for k, n in overload["statuses"].items() if k.startswith("adversarial"))
    assert hostile >= 20 and overload["served"] >= 10, overload["statuses"]
    assert overload["5xx"] == 0 and overload["normal_failed"] == [], overload
    assert overload["hostile_not_4xx"] == []
    assert targets["engine_idle_after"], result["idle_after"]
    burst = result["burst"]  # every request of a burst gets a status
    assert burst["without_status"] == 0 and burst["requests"] == 128, burst
    assert result["drain"]["completed"] == result["drain"]["in_flight"] == 6, result["drain"]
    assert result["server"]["exit_code"] == 0
    assert result["server"]["log_problem_count"] == 0, result["server"]["log_problem_lines"]


@pytest.mark.timeout(600)
def test_soak_misbehaving_sessions_leave_nothing_behind() -> None:
    result = soak.run(parsed("soak", "--quick", "--sessions", "40", "--concurrency", "8"))
    targets = result["targets"]
    behaviours = {key.split(":")[0] for key in result["outcomes"]}
    assert behaviours == set(soak.BEHAVIOURS), result["outcomes"]
    assert targets["engine_idle"] and targets["kv_pool_free"], result["after"]
    assert targets["no_session_left"], result["after"]
    assert targets["threads_unchanged"], result["process"]
    assert targets["no_client_failures"], result["outcomes"]
    # a client that never reads is closed, not kept until the idle timeout (600 s)
    hostile = result["never_reading"]["rounds"]
    assert len(hostile) == 1 and hostile[0]["closed_after_s"] is not None, hostile
