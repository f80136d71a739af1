"""The session's outgoing events: one queue, drained by one sender, in the client's dialect.

Everything a session sends goes through `emit`, so the order clients see is the order
the session produced; beta -> GA renaming happens here, in one place.
"""

from __future__ import annotations

import asyncio
from typing import Any

from app.protocol import events
from app.protocol.dialect import GA, GA_ONLY, to_ga


class Outbox:
    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def emit(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", events.new_id("event"))
        if self.dialect != GA and event["type"] in GA_ONLY:
            return
        for out in to_ga(event) if self.dialect == GA else [event]:
            self._queue.put_nowait(out)

    def close(self) -> None:
        """After the events already queued, `get` returns None."""
        self._queue.put_nowait(None)

    async def get(self) -> dict[str, Any] | None:
        return await self._queue.get()
