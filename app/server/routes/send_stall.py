"""Notices a peer that has stopped reading: one send that has not finished for too long.

A WebSocket send waits while the socket's buffers are full, which is the only sign a
server gets of a client that no longer reads. Such a session used to stay open (and
keep its queued events) until the idle timeout, ten minutes; now it is closed once a
single send has waited `limit_s`. A client on a slow link still makes progress within
that time; one that makes none for seconds is not listening.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

SEND_STALL_S = 10.0


class SendStall:
    def __init__(
        self, limit_s: float = SEND_STALL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit_s = limit_s
        self._clock = clock
        self._since: float | None = None  # when the send in progress began

    def sending(self) -> None:
        self._since = self._clock()

    def sent(self) -> None:
        self._since = None

    def stalled(self) -> bool:
        return self._since is not None and self._clock() - self._since >= self.limit_s

    async def wait(self, poll_s: float = 0.5) -> None:
        """Returns once a send has been waiting `limit_s`."""
        while not self.stalled():  # noqa: ASYNC110 - a send's progress sets no event
            await asyncio.sleep(poll_s)
