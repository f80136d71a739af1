"""What goes to a board, in order, its answer frames paced for the board's buffer.

The session paces an answer's audio at real time up to its lead (R1VOICE_AUDIO_LEAD_MS)
ahead; a board keeps what it is sent and plays it out, so that lead would be audio a cut
answer still plays. Here the frames wait, and leave at real time at most `lead_ms` ahead
of the board's playback: on barge-in or abort the frames still here are dropped, and
the board holds at most `lead_ms`. Messages keep their place among the frames (a
sentence shows as it is spoken; `tts stop` follows the answer's last frame).

A sound over the answer *holds* it (`hold`): a message (`tts stop`: the board drops what
it holds) goes at once, the frames the board had not played yet come back to the queue,
and no frame leaves until `release` (the sound was no barge-in: the answer plays on from
the same frame) or a `drop` (it was).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

LEAD_MS = 120  # two 60 ms frames: what a board may hold ahead of what it plays
# ... while it listens over the answer (`realtime`): its firmware plays out what it holds
# after `tts stop` there (its decoder is reset only when it starts listening anew)
REALTIME_LEAD_MS = 60
MAX_QUEUED = 1000  # items (about a minute of frames): past it the board is not reading


class Playout:
    def __init__(
        self,
        send_json: Callable[[dict[str, Any]], Awaitable[None]],
        send_opus: Callable[[bytes], Awaitable[None]],
        frame_ms: int,
        lead_ms: int = LEAD_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send_json, self._send_opus = send_json, send_opus
        self._frame_ms, self.lead_ms, self._clock = frame_ms, lead_ms, clock
        self._items: deque[dict[str, Any] | bytes] = deque()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._start: float | None = None  # when the board began playing what was sent since
        self._sent_ms = 0.0  # of audio sent since `_start`
        self._unplayed: deque[tuple[bytes, float]] = deque()  # frames out, when each ends
        self._held = False
        self.frames_sent = 0

    def put(self, item: dict[str, Any] | bytes) -> None:
        """Queue a message or an Opus frame (ConnectionError: the board stopped reading)."""
        if len(self._items) >= MAX_QUEUED:
            raise ConnectionError(f"the board has not read {MAX_QUEUED} messages and frames")
        self._items.append(item)
        self._wake()

    def drop(self) -> None:
        """Forget the frames not sent yet (the messages among them still go)."""
        self._items = deque(item for item in self._items if not isinstance(item, bytes))

    @property
    def playing(self) -> bool:
        """Frames wait here, or the board may still be playing some."""
        self._forget_played()
        return bool(self._unplayed) or any(isinstance(item, bytes) for item in self._items)

    def hold(self, message: dict[str, Any]) -> None:
        """Send `message` ahead of everything, and hold the frames from the first one the
        board has not played (the board drops what it holds on `message`)."""
        self._forget_played()
        self._items.extendleft(reversed([frame for frame, _ in self._unplayed]))
        self._unplayed.clear()
        self._start = None
        self._held = True
        self._items.appendleft(message)
        self._wake()

    def release(self, message: dict[str, Any] | None = None) -> None:
        """Let the frames go again, after `message` (`tts start`) when any are queued."""
        self._held = False
        if message is not None:
            self._items.appendleft(message)
        self._wake()

    def _forget_played(self) -> None:
        now = self._clock()
        while self._unplayed and self._unplayed[0][1] <= now:
            self._unplayed.popleft()

    def _wake(self) -> None:
        self._ready.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            while not self._items or (self._held and isinstance(self._items[0], bytes)):
                self._ready.clear()
                await self._ready.wait()
            item = self._items[0]
            if not isinstance(item, bytes):
                self._items.popleft()
                await self._send_json(item)
                continue
            now = self._clock()
            if self._start is None or now > self._start + self._sent_ms / 1000:
                self._start, self._sent_ms = now, 0.0  # the board played all: anew
            due = self._start + (self._sent_ms - self.lead_ms) / 1000
            if due > now:
                self._ready.clear()  # a hold or a drop during the wait is seen
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ready.wait(), due - now)
                continue
            self._items.popleft()
            await self._send_opus(item)
            self._sent_ms += self._frame_ms
            self._unplayed.append((item, self._start + self._sent_ms / 1000))
            self.frames_sent += 1
