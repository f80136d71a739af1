"""The server's open WebRTC peers (each a "call" in OpenAI's API, whose id it keeps), by
id: each runs as a task that outlives its request.

`POST /v1/realtime/calls` answers as soon as the SDP answer is ready; the peer's session
then runs here until it ends. The hangup route ends one, the lifespan's end all of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


class Peers:
    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._hangups: dict[str, Callable[[], Awaitable[None]]] = {}
        self._clients: dict[str, str] = {}  # peer -> the client address that opened it

    def __len__(self) -> int:
        return len(self._tasks)

    def of_client(self, client: str) -> int:
        """The peers open from the address `client`."""
        return sum(1 for address in self._clients.values() if address == client)

    def start(
        self,
        peer_id: str,
        run: Coroutine[Any, Any, None],
        hangup: Callable[[], Awaitable[None]],
        client: str,
    ) -> None:
        """Run the peer (`run` frees all it holds when it returns or is cancelled)."""
        task = asyncio.create_task(run, name=f"rtc-{peer_id}")
        self._tasks[peer_id] = task
        self._hangups[peer_id] = hangup
        self._clients[peer_id] = client
        task.add_done_callback(lambda _task: self._forget(peer_id))

    def _forget(self, peer_id: str) -> None:
        self._tasks.pop(peer_id, None)
        self._hangups.pop(peer_id, None)
        self._clients.pop(peer_id, None)

    async def hang_up(self, peer_id: str) -> bool:
        """End the peer `peer_id` and wait for it to be freed; False if none is open."""
        task, hangup = self._tasks.get(peer_id), self._hangups.get(peer_id)
        if task is None or hangup is None:
            return False
        await hangup()
        await asyncio.wait([task], timeout=10)
        return True

    async def close(self) -> None:
        """End every peer (the server stops)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
