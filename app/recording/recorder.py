"""One session's recording: the user's audio as the server heard it, the assistant's as it
played (queued pieces one after another; cut where the client truncated it, or where a
barge-in stopped it), written when the session ends with its items and turn timings."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import numpy as np

from app.audio import decode_audio, resample
from app.protocol.server_events import (
    Interruption,
    ItemTruncated,
    OutputAudioCleared,
    OutputItemAdded,
    ResponseDone,
    ServerEvent,
)
from app.protocol.session_schema import AudioFormat
from app.recording.store import RecordingStore
from app.recording.tracks import RATE, Track, stereo

log = logging.getLogger("r1voice.recording")


class CallRecorder:
    """Records session `session_id` into `store`, at most `max_s` seconds of it."""

    def __init__(self, store: RecordingStore, session_id: str, max_s: float) -> None:
        self.store, self.session_id = store, session_id
        self.max_samples = int(max_s * RATE)
        self.started = time.monotonic()
        self.user, self.assistant = Track(), Track()
        self.stopped: str | None = None  # why it stopped early
        self._item: str | None = None  # the answer whose audio plays now
        self.cpu_s = 0.0  # the event loop's time spent recording (bench)

    @property
    def url(self) -> str:
        return f"/v1/r1voice/sessions/{self.session_id}/recording"

    def _now(self) -> int:
        """The recording's clock: wall time, but never behind the user's audio. A client
        that sends faster than real time (a file, a test) has its audio laid end to end
        ahead of the wall clock; what answers it came after that audio, so it is placed
        after it too (on wall time alone it overlapped the words it answered)."""
        return max(int((time.monotonic() - self.started) * RATE), self.user.end)

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
            log.warning("recording of %s stopped: %s", self.session_id, reason)

    def heard(self, samples_16k: np.ndarray) -> None:
        if self.stopped is None:
            began = time.thread_time()
            self.user.add(self._now(), samples_16k)
            self._check_length()
            self.cpu_s += time.thread_time() - began

    def played(self, piece: bytes, fmt: AudioFormat) -> None:
        if self.stopped is None:
            began = time.thread_time()
            samples = resample(decode_audio(piece, fmt.type), fmt.rate, RATE)
            self.assistant.add(self._now(), samples, self._item)
            self._check_length()
            self.cpu_s += time.thread_time() - began

    def _check_length(self) -> None:
        if max(self.user.end, self.assistant.end) > self.max_samples:
            self._stop(f"it reached {self.max_samples // RATE} s (R1VOICE_RECORDING_MAX_S)")

    def event(self, event: ServerEvent) -> None:
        if isinstance(event, OutputItemAdded):
            self._item = event.item.get("id")
        elif isinstance(event, ItemTruncated):  # the client stopped playing it there
            start = self.assistant.item_start(event.item_id)
            if start is not None:
                self.assistant.cut(start + event.audio_end_ms * RATE // 1000, event.item_id)
        elif isinstance(event, Interruption) and event.verdict == "interrupt":
            self.assistant.cut(self._now(), event.item_id)
        elif isinstance(event, OutputAudioCleared):  # the server's own track stopped
            self.assistant.cut(self._now())
        elif isinstance(event, ResponseDone):
            details = event.response.get("status_details") or {}
            if details.get("reason") == "turn_detected":
                self.assistant.cut(self._now(), self._item)

    def finish(self, transcript: dict[str, Any]) -> asyncio.Future[bool] | None:
        """Write it (on a worker thread); None when nothing was recorded or it stopped
        for want of room."""
        if self.stopped is not None and not self.user.pieces:
            return None
        frames = stereo(self.user, self.assistant)
        if not frames.size:
            return None
        transcript = {**transcript, "recording": {"rate": RATE, "channels": ["user", "assistant"]}}
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(None, self.store.write, self.session_id, frames, transcript)
