"""The WebSocket's inbox: messages stamped when read off the socket, handled in order,
the reader never held up by a slow handler (within its bounds)."""

from __future__ import annotations

import asyncio

from app.server.routes.inbox import Inbox
from app.server.transport import Received


class Socket:
    """`receive()` gives the scripted messages, then a disconnect."""

    def __init__(self, texts: list[str]) -> None:
        self.messages: list[str | None] = [*texts, None]  # None: the client left
        self.read = 0

    async def receive(self) -> str | None:
        await asyncio.sleep(0)
        self.read += 1
        return self.messages[self.read - 1]


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_messages_are_stamped_when_read_while_the_handler_is_busy() -> None:
    """The handler blocks on the first message until every message has been read: the
    stamps are the reading order's, and everything is handled, in order."""
    socket = Socket(["a", "b", "c", "d"])
    handled: list[tuple[Received, float]] = []
    all_read = asyncio.Event()

    async def handle(data: Received, arrived_at: float) -> None:
        if not handled:
            await all_read.wait()
        handled.append((data, arrived_at))

    async def main() -> None:
        inbox = Inbox(socket.receive, handle, clock=Ticks())
        reader = asyncio.create_task(inbox.read())
        handler = asyncio.create_task(inbox.handle())
        await reader  # the client left while the first message was still being handled
        assert socket.read == 5 and not handled
        all_read.set()
        await asyncio.wait_for(handler, 5)

    asyncio.run(main())
    assert handled == [("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]


def test_the_reader_waits_when_the_unhandled_bytes_reach_the_bound() -> None:
    socket = Socket(["x" * 10] * 6)
    release = asyncio.Event()
    handled: list[Received] = []

    async def handle(data: Received, arrived_at: float) -> None:
        await release.wait()
        handled.append(data)

    async def main() -> None:
        inbox = Inbox(socket.receive, handle, max_bytes=25)
        reader = asyncio.create_task(inbox.read())
        handler = asyncio.create_task(inbox.handle())
        for _ in range(50):
            await asyncio.sleep(0)
        # 3 messages queued (30 bytes >= 25), one taken by the blocked handler: 5 read
        assert socket.read == 5 and not reader.done()
        release.set()
        await asyncio.wait_for(asyncio.gather(reader, handler), 5)

    asyncio.run(main())
    assert len(handled) == 6


def test_a_failed_read_still_ends_the_handler() -> None:
    async def receive() -> str | None:
        raise RuntimeError("the socket broke")

    async def handle(data: Received, arrived_at: float) -> None:
        raise AssertionError("nothing was read")

    async def main() -> None:
        inbox = Inbox(receive, handle)
        reader = asyncio.create_task(inbox.read())
        handler = asyncio.create_task(inbox.handle())
        await asyncio.wait_for(asyncio.wait({reader, handler}), 5)
        assert isinstance(reader.exception(), RuntimeError) and handler.result() is None

    asyncio.run(main())
