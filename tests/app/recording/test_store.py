"""The recordings directory: retention, a disk short of room, a write that fails."""

from __future__ import annotations

import json
import logging
import os
import wave
from pathlib import Path

import numpy as np
import pytest

from app.recording import RecordingStore

FRAMES = np.zeros((160, 2), np.int16)


def test_written_files_and_the_oldest_dropped_past_keep(tmp_path: Path) -> None:
    store = RecordingStore(str(tmp_path), keep=2)
    for i, session in enumerate(["sess_a1", "sess_b2", "sess_c3"]):
        assert store.write(session, FRAMES, {"id": session})
        os.utime(tmp_path / f"{session}.wav", (1000 + i, 1000 + i))  # written in this order
    store.write("sess_d4", FRAMES, {"id": "sess_d4"})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "sess_c3.json",
        "sess_c3.wav",
        "sess_d4.json",
        "sess_d4.wav",
    ]
    with wave.open(str(tmp_path / "sess_d4.wav")) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getnframes()) == (2, 16000, 160)
    assert json.loads((tmp_path / "sess_d4.json").read_text())["id"] == "sess_d4"


def test_a_full_disk_loses_the_recording_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """/dev/full answers every write with ENOSPC, as a full disk does."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    (tmp_path / "sess_f0.wav").symlink_to("/dev/full")
    store = RecordingStore(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="r1voice.recording"):
        assert not store.write("sess_f0", np.ones((16000, 2), np.int16), {"id": "sess_f0"})
    assert "No space left on device" in caplog.text
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


def test_no_recording_starts_short_of_free_space(tmp_path: Path) -> None:
    assert RecordingStore(str(tmp_path), min_free_mb=0).room() is None
    why = RecordingStore(str(tmp_path), min_free_mb=10**12).room()
    assert why is not None and "R1VOICE_RECORDINGS_MIN_FREE_MB" in why


def test_only_session_ids_name_a_recording(tmp_path: Path) -> None:
    store = RecordingStore(str(tmp_path))
    store.write("sess_ab", FRAMES, {})
    assert store.path("sess_ab") == tmp_path / "sess_ab.wav"
    assert store.path("../sess_ab") is None and store.path("sess_zz") is None
