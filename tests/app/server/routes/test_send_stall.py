"""A peer that never reads is closed once a send has waited `send_stall_s`, and what it
left queued counts by its real size (a real uvicorn, a raw client that never reads)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from app.server.routes.send_stall import SendStall
from bench.reliability.never_reading import open_raw, send_until_stuck
from tests.clients.conftest import start_uvicorn
from tests.conftest import app_with


def test_send_stall_counts_only_a_send_in_progress() -> None:
    now = [0.0]
    stall = SendStall(limit_s=10, clock=lambda: now[0])
    now[0] = 100.0
    assert not stall.stalled()  # nothing being sent: a quiet session is not stalled
    stall.sending()
    now[0] = 109.9
    assert not stall.stalled()
    now[0] = 110.0
    assert stall.stalled()
    stall.sent()
    assert not stall.stalled()


@pytest.mark.timeout(180)
def test_a_client_that_never_reads_is_closed(shared_components: Any) -> None:
    """Bug: such a session stayed open until the idle timeout (600 s), its outbox
    counting each echoed 100 KB `session.updated` as 256 bytes."""
    app = app_with(shared_components, send_stall_s=2.0)
    state = app.state.server
    server, thread, address = start_uvicorn(app)
    host, port = address.split(":")

    async def main() -> tuple[dict[str, Any], int, bool]:
        writer = await open_raw(host, int(port))
        most_queued = 0

        async def watch() -> None:
            nonlocal most_queued
            while True:
                for session in list(state.sessions.values()):
                    most_queued = max(most_queued, session.outbox.queued_bytes)
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        sent = await send_until_stuck(writer, frames=2000, give_up_s=20)
        deadline = time.monotonic() + 60
        while state.sessions and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        watcher.cancel()
        closed = not state.sessions
        writer.transport.abort()
        return sent, most_queued, closed

    try:
        sent, most_queued, closed = asyncio.run(main())
    finally:
        server.should_exit = True
        thread.join(10)
    assert sent["frames_sent"] >= 10, sent
    assert closed, "the session of a client that never reads was left open"
    # Several echoes of 100,000 characters each were queued and counted as such.
    assert most_queued > 300_000, most_queued
