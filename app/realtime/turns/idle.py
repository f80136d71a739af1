"""Idle nudges: when the user stays silent after an answer, the server speaks first.

`turn_detection.idle_timeout_ms` (OpenAI's field): once the last answer's audio has
played out, that much input audio with no speech in it triggers a nudge. The silence is
counted in the input stream (16 kHz positions, as the VAD counts it), from the position
that reached the server when the answer's playback ended, so a client that sends no
audio is never nudged, and the silent stretch reported is audio the client really sent.
At most `max_nudges` fire in a row; then it waits until the user speaks again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.audio import PIPELINE_RATE


@dataclass(frozen=True)
class Silence:
    """A silent stretch of the input stream that triggered a nudge (16 kHz positions)."""

    start: int
    end: int

    @property
    def start_ms(self) -> int:
        return self.start * 1000 // PIPELINE_RATE

    @property
    def end_ms(self) -> int:
        return self.end * 1000 // PIPELINE_RATE

    @property
    def ms(self) -> int:
        return (self.end - self.start) * 1000 // PIPELINE_RATE


@dataclass
class IdleTimer:
    max_nudges: int
    nudges: int = 0  # fired since the user last spoke
    # armed: when (monotonic clock) the last answer's audio ends playing on the client
    _plays_until: float | None = field(default=None, init=False)
    _since: int | None = field(default=None, init=False)  # where the silence counted began

    def answered(self, plays_until: float) -> None:
        """An answer finished; its audio plays until `plays_until`. Counting starts there."""
        self._plays_until, self._since = plays_until, None

    def stop(self) -> None:
        """No nudge until the next answer (one that did not finish, say)."""
        self._plays_until = self._since = None

    def user_spoke(self) -> None:
        """The user said something: no nudge for this answer, and the count starts over."""
        self.stop()
        self.nudges = 0

    def heard(self, start: int, end: int, arrived_at: float, timeout_ms: int) -> Silence | None:
        """Input [start, end) with no speech in it reached the server at `arrived_at`:
        the silence to nudge about once it lasts `timeout_ms` past the playback's end."""
        if self._plays_until is None or self.nudges >= self.max_nudges:
            return None
        if self._since is None:
            if arrived_at < self._plays_until:
                return None
            # the position heard when playback ended: `end` arrived this much later
            late = round((arrived_at - self._plays_until) * PIPELINE_RATE)
            self._since = max(start, end - late)
        if end - self._since < timeout_ms * PIPELINE_RATE // 1000:
            return None
        silence = Silence(self._since, end)
        self.stop()
        self.nudges += 1
        return silence
