"""Where recordings go: one directory, `<session id>.wav` (stereo PCM16, 16 kHz: the user
left, the assistant right) and `<session id>.json` (items and turn timings) per session,
the newest `keep` kept. A disk short of `min_free_mb` takes no new recording; a write
that fails (the disk filled meanwhile) is logged and removed; the session goes on."""

from __future__ import annotations

import json
import logging
import re
import shutil
import wave
from pathlib import Path
from typing import Any

import numpy as np

from app.recording.tracks import RATE

log = logging.getLogger("r1voice.recording")
SESSION_ID = re.compile(r"^sess_[0-9a-f]{1,64}$")


class RecordingStore:
    def __init__(self, directory: str, keep: int = 100, min_free_mb: int = 100) -> None:
        self.directory = Path(directory)
        self.keep, self.min_free_mb = keep, min_free_mb

    def room(self) -> str | None:
        """Why a new recording cannot start now (None: it can)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            free_mb = shutil.disk_usage(self.directory).free // (1024 * 1024)
        except OSError as exc:
            return f"the recordings directory {self.directory} is unusable ({exc})"
        if free_mb < self.min_free_mb:
            return (
                f"only {free_mb} MB free in {self.directory} "
                f"(R1VOICE_RECORDINGS_MIN_FREE_MB={self.min_free_mb})"
            )
        return None

    def path(self, session_id: str) -> Path | None:
        """The recording of `session_id`, if there is one (ids checked: no path escapes)."""
        if not SESSION_ID.match(session_id):
            return None
        path = self.directory / f"{session_id}.wav"
        return path if path.is_file() else None

    def write(self, session_id: str, frames: np.ndarray, transcript: dict[str, Any]) -> bool:
        """Write both files (then drop the oldest past `keep`); False when it failed."""
        wav = self.directory / f"{session_id}.wav"
        notes = self.directory / f"{session_id}.json"
        try:
            with wave.open(str(wav), "wb") as out:
                out.setnchannels(2)
                out.setsampwidth(2)
                out.setframerate(RATE)
                out.writeframes(frames.astype("<i2").tobytes())
            notes.write_text(json.dumps(transcript, ensure_ascii=False))
        except OSError as exc:  # a full disk, a directory gone: the recording is lost
            log.warning("recording of %s stopped: %s", session_id, exc)
            wav.unlink(missing_ok=True)
            notes.unlink(missing_ok=True)
            return False
        self._retain()
        return True

    def _retain(self) -> None:
        recordings = sorted(self.directory.glob("sess_*.wav"), key=lambda p: p.stat().st_mtime)
        for old in recordings[: max(0, len(recordings) - self.keep)]:
            old.unlink(missing_ok=True)
            old.with_suffix(".json").unlink(missing_ok=True)
