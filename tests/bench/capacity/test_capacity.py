"""`r1voice bench capacity`: a --quick run of 1 and 2 sessions against a real server that
must produce a well-formed report (no timing is asserted), and the eagerness asked for
reaching the server. Its parts: test_stats.py, test_cpu.py, test_sweep.py, test_plot.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import build_parser
from bench.capacity import capacity
from bench.registry import BENCHES


@pytest.mark.timeout(600)
def test_a_quick_run_of_one_and_two_sessions_gives_a_well_formed_report(tmp_path: Path) -> None:
    assert BENCHES["capacity"].module == "bench.capacity.capacity"
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


def test_the_eagerness_asked_for_reaches_the_servers_environment() -> None:
    from bench.kit.server import Server

    args = build_parser().parse_args(["bench", "capacity", "--eagerness", "high"])
    assert Server(args).env == {"R1VOICE_TURN_EAGERNESS": "high"}
    assert Server(build_parser().parse_args(["bench", "capacity"])).env == {}
