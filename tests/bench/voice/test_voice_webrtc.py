"""`r1voice bench voice --transport webrtc` end to end, tiny: a real server, one WebRTC
call saying one clip, one barge-in trial; the JSON has its parts. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_tiny_webrtc_run_reports_voice_to_voice_cpu_and_barge_in(tmp_path: Path) -> None:
    out = tmp_path / "voice.json"
    command = [sys.executable, "-m", "app.cli", "bench", "voice", "--quick"]
    command += ["--transport", "webrtc", "--sessions", "1", "--turns", "1", "--barge-in", "1"]
    command += ["--paired", "1"]  # ignored: there is no WebSocket to pair with
    command += ["--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["transport"] == "webrtc" and "concurrency" not in result
    assert result["machine"]["cpu_count"]
    rtc = result["transports"]["webrtc"]
    level = rtc["concurrency"]["sessions_1"]
    assert level["turns"] == 1 and level["session_errors"] == []
    assert set(level["voice_to_voice_ms"]) >= {"p50", "p95", "n"}
    assert "voice_to_voice_started_event_ms" in level
    assert set(level["voice_to_voice_audible_ms"]) >= {"p50", "p95", "n"}
    assert level["cpu"]["server"]["cpu_s"] is not None
    assert rtc["barge_in"]["trials"] == 1
    assert "to_output_audio_buffer_cleared_ms" in rtc["barge_in"]
    comparison = result["transport_comparison"]
    assert "webrtc" in comparison["levels"]["sessions_1"]
    assert result["server"]["exit_code"] is not None
    assert "paired" not in result


@pytest.mark.slow
def test_paired_turns_say_each_clip_over_both_transports(tmp_path: Path) -> None:
    out = tmp_path / "voice.json"
    command = [sys.executable, "-m", "app.cli", "bench", "voice", "--quick", "--sessions", ""]
    command += ["--transport", "both", "--turns", "1", "--barge-in", "0", "--paired", "1"]
    command += ["--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    paired = json.loads(out.read_text())["paired"]
    assert paired["pairs"] == 1 and len(paired["details"]) == 1
    pair = paired["details"][0]
    assert pair["websocket"]["clip"] == pair["webrtc"]["clip"] == "jfk"
    # the same clip, heard and answered over each transport
    for transport in ("websocket", "webrtc"):
        assert pair[transport]["status"] in ("completed", "incomplete"), pair[transport]
        assert pair[transport]["voice_to_voice_audible_ms"] is not None
    assert paired["answered"] == 1
    assert paired["voice_to_voice_audible_ms"]["webrtc_minus_websocket"]["n"] == 1
