"""bench cold-start's reading of the server's log and its summary (a real run starts
servers for minutes: `r1voice bench cold-start --quick`)."""

from __future__ import annotations

from bench.engine.cold_start import format_table, server_timeline, summarize

LOG = """INFO:     Started server process [123]
INFO:     r1voice: warm-up done in 2.10 s
INFO:     r1voice: ready after 6.25 s ({'load_vad_s': 0.06, 'load_llm_s': 3.9, 'warmup_s': 2.1})
"""


def test_the_servers_ready_line_gives_its_timeline() -> None:
    assert server_timeline(LOG) == {
        "server_ready_after_s": 6.25,
        "timeline": {"load_vad_s": 0.06, "load_llm_s": 3.9, "warmup_s": 2.1},
    }
    assert server_timeline("INFO: no ready line\n") == {}


def test_best_and_median_of_each_figure_and_the_table() -> None:
    starts = [
        {"listening_s": 2.0, "ready_s": 9.0, "first_answer_s": 9.5, "timeline": {"a": 1}},
        {"listening_s": 1.5, "ready_s": 8.0, "first_answer_s": 8.75, "timeline": {"a": 2}},
        {"listening_s": 2.5, "ready_s": 12.0, "first_answer_s": 13.0, "timeline": {"a": 3}},
    ]
    summary = summarize(starts)
    assert summary["ready_s"] == {"best": 8.0, "median": 9.0}
    assert summary["first_answer_s"] == {"best": 8.75, "median": 9.5}
    assert "server_ready_after_s" not in summary and summary["starts"] == 3
    result = {
        "model": "m",
        "rounds": 3,
        "machine": {"cpu_model": "AMD EPYC"},
        "summary": {"current": summary},
        "starts": {"current": starts},
    }
    table = format_table(result)
    assert "current      1.50/2.00     8.00/9.00     8.75/9.50" in table
    assert "current best start's timeline: {'a': 2}" in table
