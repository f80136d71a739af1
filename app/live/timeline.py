"""The session's timeline: milliseconds from the session's start, on which Live places
transcripts, appends and delegations (`start_ms`/`end_ms`, `offset_ms`).

It runs on the audio: a microphone streams in real time, so the input audio received
and the wall clock agree; a client that streams faster leads the wall clock, and the
audio decides (the transcript's times then point into the audio it sent). The
answer's audio is placed from where it starts playing, one chunk after another."""

from __future__ import annotations

import time
from collections.abc import Callable

from app.live.config import G711Format, PcmFormat


def bytes_per_ms(fmt: PcmFormat | G711Format) -> float:
    """Audio bytes per millisecond in `fmt` (PCM16: two a sample; G.711: one)."""
    return fmt.rate / 1000 * (2 if isinstance(fmt, PcmFormat) else 1)


class Timeline:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._t0 = clock()
        self._input_ms = 0.0
        self._output_end = 0.0

    def now_ms(self) -> int:
        return int(max((self._clock() - self._t0) * 1000, self._input_ms))

    def seconds(self) -> float:
        """The session's age in whole seconds (Live's billable duration)."""
        return float(int(self._clock() - self._t0))

    def heard(self, ms: float) -> None:
        """`ms` more of the user's audio arrived."""
        self._input_ms += ms

    def spoken(self, ms: float) -> tuple[int, int]:
        """`ms` more of the answer's audio: where it lies (it follows the last chunk, or
        starts now when the answer had stopped)."""
        start = max(self._output_end, float(self.now_ms()))
        self._output_end = start + ms
        return int(start), int(self._output_end)
