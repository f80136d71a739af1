"""`r1voice bench capacity`: its pure parts, and a --quick run of 1 and 2 sessions against
a real server that must produce a well-formed report (no timing is asserted)."""

from __future__ import annotations

import os
import random
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from app.cli import BENCHMARKS, build_parser
from bench import capacity
from engine.thread_name import set_os_thread_name


def test_levels_are_ascending_positive_and_a_bad_list_is_refused_by_name() -> None:
    assert capacity.parse_levels("1,2,4, 8") == [1, 2, 4, 8]
    for bad in ("0,1", "4,2", "1,1", ""):
        with pytest.raises(ValueError, match="--sessions"):
            capacity.parse_levels(bad)


def test_capacity_is_the_largest_level_that_held() -> None:
    def level(n: int, held: bool) -> dict[str, object]:
        return {"sessions": n, "held": held}

    assert capacity.capacity([level(1, True), level(2, True), level(4, False)]) == {
        "sessions": 2,
        "first_broken": 4,
    }
    assert capacity.capacity([level(1, False)]) == {"sessions": 0, "first_broken": 1}
    assert capacity.capacity([level(1, True)]) == {"sessions": 1, "first_broken": None}


def test_stage_shares_sum_the_threads_of_each_stage() -> None:
    before = {"asr_0": 1.0, "tts_0": 0.5, "r1voice-engine": 2.0, "python": 1.0}
    after = {
        "asr_0": 3.0,
        "tts_0": 1.5,
        "r1voice-engine": 5.0,
        "llm-tokenizer_0": 1.0,
        "python": 2.0,
    }
    shares = capacity.stage_shares(before, after)
    assert shares["server_cpu_s"] == 8.0
    assert shares["share"] == {
        "asr": 0.25,
        "tts": 0.125,
        "vad": 0.0,
        "turn model": 0.0,
        "llm": 0.5,  # the engine's thread and the tokenizer's
        "other": 0.125,
    }


def test_thread_cpu_reads_this_process_by_thread_name() -> None:
    done = threading.Event()

    def spin() -> None:
        assert set_os_thread_name("asr_test")  # what the server's model threads do
        x = 0
        while not done.is_set():
            x = (x * 31 + 7) % 1_000_003

    worker = threading.Thread(target=spin, name="asr_test")
    worker.start()
    try:
        import time

        time.sleep(0.3)
        seconds = capacity.thread_cpu(os.getpid())
    finally:
        done.set()
        worker.join()
    assert "asr_test" in seconds and seconds["asr_test"] >= 0.0


def test_think_times_are_seeded_and_around_the_mean() -> None:
    seed = random.Random(3).random()
    first, again = capacity._think(seed, 2.0), capacity._think(seed, 2.0)
    times = [first() for _ in range(50)]
    assert times == [again() for _ in range(50)]
    assert all(1.0 <= t <= 3.0 for t in times)


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    levels = [
        {"sessions": n, "voice_to_voice_ms": {"p50": 500.0 * n, "p95": 800.0 * n}}
        for n in (1, 2, 4)
    ]
    path = capacity.plot({"r1voice": levels}, str(tmp_path / "capacity.png"), 1500.0)
    assert path is not None
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", Path(path).read_bytes()[16:24])
    assert width > 300 and height > 200


@pytest.mark.timeout(600)
def test_a_quick_run_of_one_and_two_sessions_gives_a_well_formed_report(tmp_path: Path) -> None:
    assert BENCHMARKS["capacity"] == "bench.capacity"
    png = tmp_path / "capacity.png"
    args = build_parser().parse_args(
        ["bench", "capacity", "--quick", "--turns", "1", "--think", "0.5", "--keep-going",
         "--plot", str(png)]
    )  # fmt: skip
    result = capacity.run(args)
    assert result["machine"]["cpu_model"] and result["settings"]["levels"] == [1, 2]
    levels = result["levels"]
    assert [lv["sessions"] for lv in levels] == [1, 2]  # --keep-going: both, held or not
    for lv in levels:
        assert lv["turns"] == lv["sessions"]  # one turn each
        assert lv["turns_ok"] + lv["turns_failed"] == lv["turns"], lv
        assert lv["held"] == (lv["turns_failed"] == 0 and lv["voice_to_voice_ms"]["p95"] <= 1500.0)
        assert lv["cpu"]["server_cpu_s"] > 0
        shares = lv["cpu"]["share"]
        assert set(shares) == {"asr", "tts", "vad", "turn model", "llm", "other"}
        assert abs(sum(shares.values()) - 1.0) < 0.01
        assert "measured" in lv["barge_in"]
        tts = lv["server_breakdown_ms"]["first_token_to_first_audio_ms"]
        assert tts["n"] == lv["server_breakdown_ms"]["speech_stopped_to_first_audio_ms"]["n"]
        pair = lv["turns_ending_together"]
        assert pair["alone"]["n"] + pair["together"]["n"] == lv["turns_ok"]
        clips = lv["voice_to_voice_by_clip_ms"]
        assert sum(row["n"] for row in clips.values()) == lv["turns_ok"]
        wait = lv["server_breakdown_ms"]["speech_end_to_speech_stopped_ms"]
        assert wait["n"] == lv["turns_ok"] and wait["p50"] < lv["voice_to_voice_ms"]["p50"]
    assert result["capacity"]["sessions"] in (0, 1, 2)
    assert result["plot"] == str(png) and png.read_bytes()[:4] == b"\x89PNG"
    assert result["server"]["exit_code"] == 0


def test_a_peer_without_thread_names_is_counted_by_process() -> None:
    pid = os.getpid()
    system = capacity.System("pipecat+ws://x", [pid], False, {pid: "pipeline"})
    seconds = system.cpu()
    assert list(seconds) == ["pipeline"] and seconds["pipeline"] > 0
    shares = capacity.stage_shares({"pipeline": 0.0}, {"pipeline": 2.0}, system.stages())
    assert shares == {"server_cpu_s": 2.0, "share": {"pipeline": 1.0, "other": 0.0}}


def test_the_comparison_gives_the_ratios_and_the_targets() -> None:
    def level(n: int, p50: float, held: bool) -> dict[str, object]:
        return {"sessions": n, "held": held, "voice_to_voice_ms": {"p50": p50}}

    ours = [level(1, 600.0, True), level(2, 700.0, True), level(4, 900.0, True)]
    peer = [level(1, 1000.0, True), level(2, 2000.0, False), level(4, 3000.0, False)]
    out = capacity.compare(ours, peer)
    assert out["capacity"] == {"r1voice": 4, "pipecat": 1, "ratio": 4.0}
    assert out["one_session_p50_ms"] == {"r1voice": 600.0, "pipecat": 1000.0, "ratio": 0.6}
    assert out["targets"]["capacity_ratio_met"] and out["targets"]["one_session_p50_met"]
    worse = capacity.compare([level(1, 900.0, True)], [level(1, 1000.0, True)])
    assert worse["capacity"]["ratio"] == 1.0
    assert not worse["targets"]["capacity_ratio_met"]
    assert not worse["targets"]["one_session_p50_met"]  # 0.9 > 0.8


def test_thread_cpu_counts_the_servers_worker_processes_by_their_name() -> None:
    """The partial passes run in a worker process ("asr-partial"): its CPU is the ASR's."""
    from app.pausable_process import PausableProcess

    worker = PausableProcess("asr-partial", "tests.app.pausable_worker", [])
    try:
        worker.call(("spin", 0.2))
        seconds = capacity.thread_cpu(os.getpid())
    finally:
        worker.close()
    assert seconds.get("asr-partial", 0.0) >= 0.1


def test_turns_are_summarized_per_clip_slowest_first() -> None:
    turns = [
        {"clip": "q1", "voice_to_voice_ms": 500.0},
        {"clip": "jfk", "voice_to_voice_ms": 1600.0},
        {"clip": "q1", "voice_to_voice_ms": 700.0},
    ]
    rows = capacity.by_clip(turns)
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

    report = capacity.ending_together(
        [
            [turn(10.0, 900.0), turn(20.0, 500.0)],
            [turn(10.25, 1100.0), turn(30.0, 700.0)],  # 0.25 s after the first session's
            [turn(20.5, 600.0)],  # 0.5 s after: alone
        ]
    )
    assert report["window_s"] == capacity.TOGETHER_S == 0.3
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
    assert capacity.ending_together([[turn(1.0, 500.0), turn(1.1, 700.0)]])["together"]["n"] == 0


def test_the_eagerness_asked_for_reaches_the_servers_environment() -> None:
    from bench.voice.server import Server

    args = build_parser().parse_args(["bench", "capacity", "--eagerness", "high"])
    assert Server(args).env == {"R1VOICE_TURN_EAGERNESS": "high"}
    assert Server(build_parser().parse_args(["bench", "capacity"])).env == {}
