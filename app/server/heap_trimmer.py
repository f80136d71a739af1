"""Gives the heap memory a closed session freed back to the system.

A hostile session (large messages, a client that never reads) makes the server build
and free many large strings. glibc keeps what is freed in its arenas, so RSS stayed
~70 MB higher after each such session though nothing was leaked (`bench soak`'s
hostile rounds: after three, RSS was 15% above its start; `malloc_trim` brought it back
below). Once sessions stop closing for a moment, and at most every `interval_s`, the
heap is trimmed in a worker thread (it walks every arena). A no-op where the C library has no `malloc_trim`
(musl, macOS).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger("r1voice.memory")

TRIM_INTERVAL_S = 5.0
# After the last close: a session's buffers are freed when its connection's tasks end,
# just after the close; a trim before that finds nothing to give back.
SETTLE_S = 1.0


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim  # type: ignore[no-any-return]


class HeapTrimmer:
    def __init__(
        self,
        interval_s: float = TRIM_INTERVAL_S,
        settle_s: float = SETTLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s, self.settle_s = interval_s, settle_s
        self._clock = clock
        self._trim = _malloc_trim()
        self._last = -interval_s
        self._due = 0.0
        self._pending: asyncio.Task[None] | None = None
        self.trimmed_at: list[float] = []  # when each trim began (the last few)

    @property
    def available(self) -> bool:
        return self._trim is not None

    def session_closed(self) -> None:
        """Trim once things settle: `settle_s` after the last close, at most one trim
        per `interval_s`."""
        if self._trim is None:
            return
        self._due = max(self._clock() + self.settle_s, self._last + self.interval_s)
        if self._pending is None or self._pending.done():
            self._pending = asyncio.create_task(self._trim_when_due(), name="heap-trim")

    async def _trim_when_due(self) -> None:
        while (wait := self._due - self._clock()) > 0:  # noqa: ASYNC110 - a moving deadline
            await asyncio.sleep(wait)
        self._last = self._clock()
        self.trimmed_at.append(self._last)
        assert self._trim is not None
        del self.trimmed_at[:-8]
        await asyncio.to_thread(self._trim, 0)

    async def settled(self) -> None:
        """Returns once no trim is waiting (the one scheduled, if any, has run)."""
        if self._pending is not None:
            await asyncio.wait([self._pending])

    async def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pending
