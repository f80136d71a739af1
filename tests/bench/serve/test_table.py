"""The serve table's same-run ratios (issue #54's targets) and its text, from rows."""

from __future__ import annotations

from typing import Any

from bench.serve import table

SLO = {"short": 1.0, "chat": 2.0, "long": 10.0}


def _row(short_p99: float | None, rps: float, e2e_p99: float) -> dict[str, Any]:
    return {
        "short": {"ttft_p50_s": 0.1, "ttft_p99_s": short_p99},
        "requests_per_s": rps,
        "output_tokens_per_s": rps * 20,
        "goodput_requests_per_s": rps,
        "e2e_p50_s": 0.5,
        "e2e_p99_s": e2e_p99,
        "refused": 0,
        "failed": 0,
    }


def _result(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    result = {"results": results, "model": "m"}
    result["slo"] = {name: table.slo_summary(rows, SLO) for name, rows in results.items()}
    return result


def test_engine_targets_against_static_fcfs_and_reorder() -> None:
    result = _result(
        {
            "static": {"1.0": _row(0.8, 0.9, 8.0), "2.0": _row(5.0, 1.0, 20.0)},
            "fcfs": {"1.0": _row(0.5, 1.0, 4.0), "2.0": _row(2.0, 1.9, 10.0)},
            "reorder": {"1.0": _row(0.4, 1.0, 4.0), "2.0": _row(1.6, 1.9, 10.0)},
            "priority": {"1.0": _row(0.2, 1.0, 3.0), "2.0": _row(0.4, 1.9, 9.0)},
        }
    )
    targets = table.targets(result)
    assert targets["static_saturation_rate"] == 1.0  # the highest rate static meets the SLOs at
    assert targets["throughput_within_slo_priority_vs_static"] == round(1.9 / 0.9, 3)
    assert targets["throughput_within_slo_fcfs_vs_static"] == round(1.0 / 0.9, 3)
    assert targets["e2e_p99_priority_vs_static_at_saturation"] == round(3.0 / 8.0, 3)
    assert targets["short_ttft_p99_priority_vs_fcfs"] == {"1.0": 0.4, "2.0": 0.2}
    assert targets["short_ttft_p99_priority_vs_reorder"] == {"1.0": 0.5, "2.0": 0.25}
    text = table.format_rows({**result, "targets": targets})
    assert "static: P99 within the SLOs up to 1.0 req/s" in text
    assert "short_ttft_p99_priority_vs_fcfs: {'1.0': 0.4, '2.0': 0.2}" in text


def test_server_targets_are_r1voice_against_each_peer() -> None:
    result = _result(
        {
            "r1voice": {"0.5": _row(0.3, 0.5, 2.0), "1.0": _row(0.6, 0.9, 3.0)},
            "vllm": {"0.5": _row(0.9, 0.45, 4.0), "1.0": _row(3.0, 0.6, 9.0)},
            "llama.cpp": {"0.5": _row(None, 0.2, 30.0), "1.0": _row(None, 0.2, 60.0)},
        }
    )
    targets = table.targets(result)
    assert targets["goodput_within_slo_r1voice_vs_vllm"] == round(0.9 / 0.45, 3)
    assert targets["goodput_within_slo_r1voice_vs_llama.cpp"] is None  # it never met them
    assert targets["goodput_r1voice_vs_llama.cpp_per_rate"] == {"0.5": 2.5, "1.0": 4.5}
    assert result["slo"]["llama.cpp"]["p99_crosses_slo_at"] == 0.5


def test_a_rate_met_again_above_a_miss_does_not_raise_the_throughput_within_slo() -> None:
    rows = {"1.0": _row(0.5, 0.9, 3.0), "2.0": _row(1.2, 1.8, 4.0), "4.0": _row(0.9, 3.5, 5.0)}
    summary = table.slo_summary(rows, SLO)
    assert (summary["max_rate_within_slo"], summary["p99_crosses_slo_at"]) == (1.0, 2.0)
    assert summary["requests_per_s_within_slo"] == 0.9
