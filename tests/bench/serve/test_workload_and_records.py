"""The serve mix is the same for a seed, Poisson in its gaps, and its chats share their
conversation's prefix; the records keep refused and failed requests in the percentiles;
the table finds where P99 crosses the SLO."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from bench.serve import table, workload
from bench.serve.records import StreamTimer, failed, pct, refused, summarize

SLO = {"short": 1.0, "chat": 2.0, "long": 10.0}


def test_the_mix_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    a, b = workload.make(50, 2.0, seed=3), workload.make(50, 2.0, seed=3)
    assert a == b
    assert a != workload.make(50, 2.0, seed=4)


def test_arrivals_are_poisson_at_the_rate_and_classes_in_their_shares() -> None:
    reqs = workload.make(4000, 5.0, seed=0)
    gaps = [b.t - a.t for a, b in itertools.pairwise(reqs)]
    mean = sum(gaps) / len(gaps)
    assert mean == pytest.approx(1 / 5.0, rel=0.05)
    # exponential: the standard deviation equals the mean
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps))
    assert sd == pytest.approx(mean, rel=0.1)
    for kind, share in workload.SHARES.items():
        count = sum(1 for r in reqs if r.kind == kind)
        assert count / len(reqs) == pytest.approx(share, abs=0.03)


def test_a_chat_turn_carries_its_conversation_so_far() -> None:
    chats = [r for r in workload.make(200, 1.0, seed=1) if r.kind == "chat"]
    extended = 0
    for i, later in enumerate(chats):
        for earlier in chats[:i]:
            n = len(earlier.messages)
            if n < len(later.messages) and later.messages[:n] == earlier.messages:
                extended += 1
                break
    assert extended > len(chats) // 2  # most turns continue an earlier one's prefix
    assert all(c.messages[0]["role"] == "system" for c in chats)


def test_long_requests_are_documents_and_full_size_is_longer() -> None:
    quick = [r for r in workload.make(60, 1.0, quick=True) if r.kind == "long"]
    full = [r for r in workload.make(60, 1.0, quick=False) if r.kind == "long"]
    assert min(len(r.messages[0]["content"].split()) for r in quick) >= 250
    assert min(len(r.messages[0]["content"].split()) for r in full) >= 1100
    body = quick[0].body("m")
    assert body["stream"] and body["ignore_eos"] and body["max_tokens"] == 24


def test_bad_sizes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="rate > 0"):
        workload.make(10, 0.0)


def _stream(timer: StreamTimer, contents: list[str], usage: int | None) -> None:
    for i, text in enumerate(contents):
        chunk = {"choices": [{"delta": {"content": text}}]}
        timer.line("data: " + json.dumps(chunk), 1.0 + i)
    if usage is not None:
        timer.line("data: " + json.dumps({"choices": [], "usage": {"completion_tokens": usage}}), 9)
    timer.line("data: [DONE]", 9.0)


def test_a_stream_is_timed_from_its_first_content_and_counted_by_usage() -> None:
    timer = StreamTimer(sent=0.5)
    timer.line(": keep-alive", 0.7)
    timer.line("data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}]}), 0.8)
    _stream(timer, ["Hel", "lo", "!"], usage=5)
    record = timer.record("short", 7, now=10.5, start=0.0)
    assert record == {
        "index": 7,
        "kind": "short",
        "outcome": "answered",
        "sent": 0.5,
        "ttft": 0.5,
        "e2e": 10.0,
        "tpot": round(9.5 / 4, 5),
        "tokens": 5,
    }


def test_a_stream_cut_before_done_is_a_failure() -> None:
    timer = StreamTimer(sent=0.0)
    timer.line("data: " + json.dumps({"choices": [{"delta": {"content": "a"}}]}), 1.0)
    record = timer.record("chat", 1, now=2.0, start=0.0)
    assert record["outcome"] == "failed" and "before [DONE]" in record["why"]


def _answered(kind: str, i: int, ttft: float) -> dict[str, object]:
    timer = StreamTimer(sent=float(i))
    _stream(timer, ["x", "y"], usage=2)
    record = timer.record(kind, i, now=float(i) + ttft + 1.0, start=0.0)
    record["ttft"] = ttft
    return record


def test_refused_and_failed_requests_stay_in_the_percentiles() -> None:
    records = [_answered("short", i, 0.1) for i in range(98)]
    records.append(refused("short", 98, 429, 98.0))
    records.append(failed("short", 99, "ReadError", 99.0))
    records[5]["lag"] = 0.25  # sent a quarter second after its arrival time
    summary = summarize(records, SLO, offered_rate=1.0)
    assert summary["send_lag_max_s"] == 0.25
    assert summary["short"]["ttft_p50_s"] == 0.1
    assert summary["short"]["ttft_p99_s"] is None  # the 99th is a request never answered
    assert (summary["answered"], summary["refused"], summary["failed"]) == (98, 1, 1)
    assert summary["not_answered"] == {"refused: 429": 1, "failed: ReadError": 1}
    assert summary["goodput_requests_per_s"] == summary["requests_per_s"]


def test_nearest_rank_percentiles() -> None:
    assert pct([float(i) for i in range(1, 101)], 99) == 99.0
    assert pct([1.0, 2.0], 50) == 1.0
    assert pct([], 50) is None


def test_the_slo_crossing_and_the_throughput_within_it() -> None:
    def row(p99: float | None, rps: float) -> dict[str, object]:
        return {
            "short": {"ttft_p99_s": p99},
            "requests_per_s": rps,
            "goodput_requests_per_s": rps,
        }

    by_rate = {
        "1.0": row(0.3, 0.9),
        "2.0": row(0.8, 1.8),
        "4.0": row(3.0, 2.5),
        "8.0": row(None, 2),
    }
    summary = table.slo_summary(by_rate, SLO)
    assert summary == {
        "max_rate_within_slo": 2.0,
        "requests_per_s_within_slo": 1.8,
        "goodput_within_slo": 1.8,
        "p99_crosses_slo_at": 4.0,
    }
