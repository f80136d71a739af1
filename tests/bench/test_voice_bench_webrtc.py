"""`r1voice bench voice --transport webrtc` end to end, tiny: a real server, one WebRTC
call saying one clip, one barge-in trial; the JSON has its parts. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_tiny_webrtc_run_reports_voice_to_voice_cpu_and_barge_in(tmp_path: Path) -> None:
    out = tmp_path / "voice.json"
    command = [sys.executable, "-m", "app.cli", "bench", "voice", "--quick"]
    command += ["--transport", "webrtc", "--sessions", "1", "--turns", "1", "--barge-in", "1"]
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
