"""The realtime test harness: inputs in, the exact typed events out (after Pipecat's
`run_test` in src/pipecat/tests/utils.py).

A part of the realtime pipeline (the turn coordinator, one response, a controller) is
built around a `Harness`: it emits its server events into `harness.emit`, and says which
background tasks it runs (`pending`). `run` feeds the part its inputs in order, lets its
work settle, and checks the classes of the events that came out, exactly and in order.
An event's fields read as the JSON a client gets (`event["item_id"]`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from app.protocol.server_events import ServerEvent

E = TypeVar("E", bound=ServerEvent)


class Harness:
    """The events a part emitted, and its background work: `pending` lists the part's
    running tasks (a subclass that builds the part may override it instead)."""

    def __init__(self, pending: Callable[[], set[asyncio.Task[Any]]] | None = None) -> None:
        self.events: list[ServerEvent] = []
        self._pending = pending

    def emit(self, event: ServerEvent) -> None:
        """The part's event sink."""
        self.events.append(event)

    @property
    def types(self) -> list[type[ServerEvent]]:
        return [type(e) for e in self.events]

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]

    def pending(self) -> set[asyncio.Task[Any]]:
        """The part's background tasks still running (settle waits for them)."""
        return self._pending() if self._pending is not None else set()

    async def settle(self) -> None:
        """Let the callbacks scheduled so far run, then wait until the part's background
        work has ended (and what that scheduled, in turn)."""
        for _ in range(20):
            await asyncio.sleep(0)
        while tasks := self.pending():
            await asyncio.wait(tasks)

    async def run(
        self,
        *steps: Awaitable[object] | Callable[[], object],
        expect: Sequence[type[ServerEvent]],
    ) -> list[ServerEvent]:
        """Feed the inputs in order (awaitables, or calls), settle, and check that exactly
        the `expect`ed events came out of them, in order; returns those events."""
        start = len(self.events)
        for step in steps:
            result = step() if callable(step) else step
            if isinstance(result, Awaitable):
                await result
        await self.settle()
        out = self.events[start:]
        assert [type(e) for e in out] == list(expect)
        return out
