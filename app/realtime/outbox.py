"""The session's outgoing events: one queue, drained by one sender, in the client's dialect.

Everything a session sends goes through `emit`, so the order clients see is the order
the session produced; beta -> GA renaming happens here, in one place. The queue is
bounded (events and bytes): a client that stops reading cannot grow the server's
memory. Past the bound nothing more is queued, `overflowed` is set, and the connection
is closed (the session's answers are cancelled with it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from app.protocol import events
from app.protocol.dialect import GA, GA_ONLY, to_ga

MAX_EVENTS = 20_000
MAX_BYTES = 32 * 1024 * 1024  # about five minutes of 24 kHz answer audio, base64


def _size(event: dict[str, Any]) -> int:
    """A cheap estimate of the event's size on the wire (audio deltas dominate)."""
    delta = event.get("delta")
    return 256 + (len(delta) if isinstance(delta, str) else 0)


class Outbox:
    def __init__(
        self,
        dialect: str,
        max_events: int = MAX_EVENTS,
        max_bytes: int = MAX_BYTES,
        extensions: bool = False,
    ) -> None:
        self.dialect = dialect
        # Our `r1voice.*` events (turn metrics, reasoning) only for clients that asked:
        # SDKs that validate every event against OpenAI's schema report them as errors.
        self.extensions = extensions
        self.max_events, self.max_bytes = max_events, max_bytes
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._bytes = 0
        self.overflowed = asyncio.Event()

    def emit(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", events.new_id("event"))
        if self.dialect != GA and event["type"] in GA_ONLY:
            return
        if not self.extensions and event["type"].startswith("r1voice."):
            return
        for out in to_ga(event) if self.dialect == GA else [event]:
            size = _size(out)
            if self._queue.qsize() >= self.max_events or self._bytes + size > self.max_bytes:
                self.overflowed.set()  # the client is not reading: drop, and close it
                return
            self._bytes += size
            self._queue.put_nowait(out)

    def close(self) -> None:
        """After the events already queued, `get` returns None."""
        self._queue.put_nowait(None)

    async def get(self) -> dict[str, Any] | None:
        event = await self._queue.get()
        if event is not None:
            self._bytes -= _size(event)
        return event
