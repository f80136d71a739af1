"""`bench capacity`'s statistics: the levels, the capacity, r1voice against the peer, the
turns by clip and those ending together."""

from __future__ import annotations

from typing import Any

import pytest

from bench.capacity import stats


def test_levels_are_ascending_positive_and_a_bad_list_is_refused_by_name() -> None:
    assert stats.parse_levels("1,2,4, 8") == [1, 2, 4, 8]
    for bad in ("0,1", "4,2", "1,1", ""):
        with pytest.raises(ValueError, match="--sessions"):
            stats.parse_levels(bad)


def test_capacity_is_the_largest_level_that_held() -> None:
    def level(n: int, held: bool) -> dict[str, object]:
        return {"sessions": n, "held": held}

    assert stats.capacity([level(1, True), level(2, True), level(4, False)]) == {
        "sessions": 2,
        "first_broken": 4,
    }
    assert stats.capacity([level(1, False)]) == {"sessions": 0, "first_broken": 1}
    assert stats.capacity([level(1, True)]) == {"sessions": 1, "first_broken": None}


def test_the_comparison_gives_the_ratios_and_the_targets() -> None:
    def level(n: int, p50: float, held: bool) -> dict[str, object]:
        return {"sessions": n, "held": held, "voice_to_voice_ms": {"p50": p50}}

    ours = [level(1, 600.0, True), level(2, 700.0, True), level(4, 900.0, True)]
    peer = [level(1, 1000.0, True), level(2, 2000.0, False), level(4, 3000.0, False)]
    out = stats.compare(ours, peer)
    assert out["capacity"] == {"r1voice": 4, "pipecat": 1, "ratio": 4.0}
    assert out["one_session_p50_ms"] == {"r1voice": 600.0, "pipecat": 1000.0, "ratio": 0.6}
    assert out["targets"]["capacity_ratio_met"] and out["targets"]["one_session_p50_met"]
    worse = stats.compare([level(1, 900.0, True)], [level(1, 1000.0, True)])
    assert worse["capacity"]["ratio"] == 1.0
    assert not worse["targets"]["capacity_ratio_met"]
    assert not worse["targets"]["one_session_p50_met"]  # 0.9 > 0.8


def test_turns_are_summarized_per_clip_slowest_first() -> None:
    turns = [
        {"clip": "q1", "voice_to_voice_ms": 500.0},
        {"clip": "jfk", "voice_to_voice_ms": 1600.0},
        {"clip": "q1", "voice_to_voice_ms": 700.0},
    ]
    rows = stats.by_clip(turns)
    assert list(rows) == ["jfk", "q1"]
    assert rows["q1"]["n"] == 2 and rows["q1"]["max"] == 700.0


def test_turns_ending_within_the_window_of_another_sessions_are_told_apart() -> None:
    def turn(end: float, ms: float) -> dict[str, Any]:
        return {
            "speech_end": end,
            "voice_to_voice_ms": ms,
            "speech_end_to_speech_stopped_event_ms": ms / 2,
            "server": {
                "speech_stopped_to_first_clause_ms": ms / 10,
                "speech_stopped_to_first_synthesized_ms": ms / 5,
                "speech_stopped_to_first_audio_ms": ms / 4,
            },
        }

    report = stats.ending_together(
        [
            [turn(10.0, 900.0), turn(20.0, 500.0)],
            [turn(10.25, 1100.0), turn(30.0, 700.0)],  # 0.25 s after the first session's
            [turn(20.5, 600.0)],  # 0.5 s after: alone
        ]
    )
    assert report["window_s"] == stats.TOGETHER_S == 0.3
    assert (report["together"]["n"], report["together"]["p50"]) == (2, 1000.0)
    assert (report["alone"]["n"], report["alone"]["p50"]) == (3, 600.0)
    assert report["p50_ratio"] == 1.67
    assert report["stages"] == {
        "alone": {
            "turn_end_wait_p50_ms": 300.0,
            "server_part_p50_ms": 150.0,
            "speech_stopped_to_first_clause_p50_ms": 60.0,
            "first_clause_to_first_synthesized_p50_ms": 60.0,
            "first_synthesized_to_first_audio_p50_ms": 30.0,
        },
        "together": {
            "turn_end_wait_p50_ms": 500.0,
            "server_part_p50_ms": 250.0,
            "speech_stopped_to_first_clause_p50_ms": 100.0,
            "first_clause_to_first_synthesized_p50_ms": 100.0,
            "first_synthesized_to_first_audio_p50_ms": 50.0,
        },
    }
    # one session's own turns never end "together" with each other
    assert stats.ending_together([[turn(1.0, 500.0), turn(1.1, 700.0)]])["together"]["n"] == 0
