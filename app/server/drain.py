"""Graceful drain on SIGTERM: stop taking work, let the open turns finish, then exit 0.

At the first SIGTERM (or SIGINT) readiness turns 503 at once, new Realtime sessions and
new HTTP requests are refused (503, `shutting_down`), and every open session keeps going
until it is idle (no turn being spoken, transcribed or answered); then it is closed with
1001. HTTP requests already running finish. Whatever is still open when `drain_timeout_s`
runs out is closed then. A second signal stops at once. uvicorn alone would close every
WebSocket with 1012 mid-answer and re-raise the signal (exit status 143).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time
from types import FrameType

import uvicorn

log = logging.getLogger("r1voice")
POLL_S = 0.05
CLOSE_GRACE_S = 2.0  # for sessions told to close at the deadline to send their 1001


class Drain:
    """The drain's state, shared by the server and the routes."""

    def __init__(self) -> None:
        self.started = asyncio.Event()  # refuse new work; idle sessions close
        self.deadline = asyncio.Event()  # close every session now

    @property
    def draining(self) -> bool:
        return self.started.is_set()


class DrainingServer(uvicorn.Server):
    """uvicorn's server with the drain above in front of its own shutdown."""

    def __init__(
        self, config: uvicorn.Config, drain: Drain, sessions: dict[str, object], timeout_s: float
    ) -> None:
        super().__init__(config)
        self.drain, self.sessions, self.timeout_s = drain, sessions, timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drainer: asyncio.Task[None] | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Called by the signal handler (any thread): the first signal drains."""
        if self._loop is None or self.drain.draining:
            self.force_exit = self.drain.draining or self.should_exit  # a second signal: now
            self.should_exit = True
            return
        self._loop.call_soon_threadsafe(self._begin, sig)

    def _begin(self, sig: int) -> None:
        if self.drain.draining:
            return
        log.info("%s: draining (up to %.0f s)", signal.Signals(sig).name, self.timeout_s)
        self.drain.started.set()
        self._drainer = asyncio.create_task(self._drain_then_exit())

    async def _drain_then_exit(self) -> None:
        # Polled: sessions end in their own routes, and nothing signals "the last one ended".
        deadline = time.monotonic() + self.timeout_s
        while self.sessions and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(POLL_S)
        self.drain.deadline.set()
        grace = time.monotonic() + CLOSE_GRACE_S
        while self.sessions and time.monotonic() < grace:  # noqa: ASYNC110
            await asyncio.sleep(POLL_S)
        # HTTP requests still running get what is left of the timeout, then uvicorn stops.
        self.config.timeout_graceful_shutdown = max(1, round(deadline - time.monotonic()))
        self.should_exit = True  # not the signal re-raised on exit: a drain exits 0
