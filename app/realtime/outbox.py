"""The session's outgoing events: one queue, drained by one sender, in the client's dialect.

Everything a session sends goes through `emit`, so the order clients see is the order
the session produced. This is the one place an event becomes JSON, in the client's
dialect (server_events/wire.py says how). Each event is serialized once, when
emitted, and the queue holds that text: its bound (events and
bytes) counts what is really queued, so a client that stops reading cannot grow the
server's memory, whatever the events carry (a `session.updated` echoes the client's
instructions). Past the bound nothing more is queued, `overflowed` is set, and the
connection is closed (the session's answers are cancelled with it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from app.protocol import events
from app.protocol.server_events import ServerEvent
from app.protocol.server_events.wire import to_wire

MAX_EVENTS = 20_000
MAX_BYTES = 32 * 1024 * 1024  # about five minutes of 24 kHz answer audio, base64


def serialize(event: dict[str, Any]) -> str:
    """The event as it goes on the wire (compact, UTF-8 text as is, like Starlette's
    `send_json`)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


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
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._bytes = 0
        self.overflowed = asyncio.Event()
        # sees every event first, our extensions included (the session's trace)
        self.observe: Callable[[ServerEvent], None] | None = None

    @property
    def queued_bytes(self) -> int:
        """The characters of the events queued and not yet sent."""
        return self._bytes

    def emit(self, event: ServerEvent) -> None:
        if self.observe is not None:
            self.observe(event)
        self.send(event)

    def send(self, event: ServerEvent) -> None:
        """Queue `event` for the client, unobserved (a translating outbox observes the
        session's own event and sends its translation)."""
        if event.EXTENSION and not self.extensions:
            return
        for out in to_wire(event, self.dialect, events.new_id("event")):
            if self.overflowed.is_set():
                return
            text = serialize(out)
            if self._queue.qsize() >= self.max_events or self._bytes + len(text) > self.max_bytes:
                self.overflowed.set()  # the client is not reading: drop, and close it
                return
            self._bytes += len(text)
            self._queue.put_nowait(text)

    def close(self) -> None:
        """After the events already queued, `get` returns None."""
        self._queue.put_nowait(None)

    def discard(self) -> None:
        """Drop what was never sent (the peer is gone or does not read): a closed
        session's objects refer to one another, so they wait for Python's cyclic
        collector, and its queue can hold up to `max_bytes` meanwhile."""
        while not self._queue.empty():
            self._queue.get_nowait()
        self._bytes = 0

    async def get_text(self) -> str | None:
        """The next event as serialized for the wire; None once closed and drained."""
        text = await self._queue.get()
        if text is not None:
            self._bytes -= len(text)
        return text

    async def get(self) -> dict[str, Any] | None:
        """The next event, parsed back (for in-process consumers and tests)."""
        text = await self.get_text()
        return None if text is None else json.loads(text)
