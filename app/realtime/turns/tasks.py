"""The background work of one session's turns (final passes, a cancelled answer's end).

One set, so the turns are idle only when all of it is done, and closing stops all of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from app.realtime.turns.transcriber import stop_task


class Tasks:
    def __init__(self) -> None:
        self._running: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run `work` in the background; it counts until it ends."""
        task = asyncio.create_task(work, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    @property
    def running(self) -> bool:
        return bool(self._running)

    def snapshot(self) -> set[asyncio.Task[None]]:
        """The tasks running now (tests wait for them)."""
        return set(self._running)

    async def stop(self) -> None:
        """Cancel every task and wait until each ended."""
        for task in list(self._running):
            await stop_task(task)
