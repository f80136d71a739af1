"""A connection's incoming messages, stamped when they arrive, handled one at a time.

The session handles one message at a time, and some take a while (judging a pause
waits for the early transcript, up to semantic_end's TRANSCRIPT_WAIT_S). Reading and handling used to be one loop,
so a microphone's appends waited unread during such a wait and then came in a rush:
the session measured the client's pace where it handled the messages, read the rush as
a client streaming faster than real time, and from then on judged every pause without
the words (`bench voice`: every turn after JFK's long one). Here a reader takes each
message off the socket as it comes and stamps it; the handler gets the stamp with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from app.server.transport import Received

# About 10 s of a microphone's 20 ms appends, or 8 MiB (two of the largest messages): past
# either the reader stops reading and the client's sends wait (TCP backpressure), as they
# did before there was a reader.
INBOX_MESSAGES = 512
INBOX_BYTES = 8 * 1024 * 1024

Message = tuple[float, Received]  # (when it arrived, what it holds)


class Inbox:
    """`read()` and `handle()` run as two tasks of the connection: `read` ends when the
    client leaves; `handle` then finishes what was read and ends too."""

    def __init__(
        self,
        receive: Callable[[], Awaitable[Received | None]],
        handle: Callable[[Received, float], Awaitable[None]],
        clock: Callable[[], float] = time.monotonic,
        size: int = INBOX_MESSAGES,
        max_bytes: int = INBOX_BYTES,
    ) -> None:
        self._receive = receive
        self._handle = handle
        self._clock = clock
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue(maxsize=size)
        self._read_done = False
        self._max_bytes = max_bytes
        self._bytes = 0  # of the messages read and not yet handled
        self._room = asyncio.Event()
        self._room.set()

    async def read(self) -> None:
        """Take messages off the connection until the client disconnects (None)."""
        try:
            while (data := await self._receive()) is not None:
                arrived_at = self._clock()
                await self._room.wait()
                await self._queue.put((arrived_at, data))
                self._bytes += len(data)
                if self._bytes >= self._max_bytes:
                    self._room.clear()
        finally:
            self._read_done = True
            with contextlib.suppress(asyncio.QueueFull):  # a full queue ends by draining
                self._queue.put_nowait(None)

    async def handle(self) -> None:
        """Handle what was read, in order, until the reader is done and nothing is left."""
        while not (self._read_done and self._queue.empty()):
            message = await self._queue.get()
            if message is None:
                return
            arrived_at, data = message
            self._bytes -= len(data)
            if self._bytes < self._max_bytes:
                self._room.set()
            await self._handle(data, arrived_at)
