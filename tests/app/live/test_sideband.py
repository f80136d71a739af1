"""A trusted server's sideband (`/v1/live/sessions/{id}/attach`) on a running Live
session: it sees the session's events, appends and closes as the primary client may, and
is refused without the API key (a client secret is not enough), for an unknown session,
and for audio."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest
import websockets

from tests.app.live.conftest import LiveClient, live_connection
from tests.clients.conftest import SHORT_ANSWER

pytestmark = pytest.mark.timeout(300)
KEY = "sk-live-test"
AUTH = {"Authorization": f"Bearer {KEY}"}


async def refused(url: str, headers: dict[str, str]) -> str:
    """Why the server turns a sideband away: the handshake's HTTP status, or the close
    reason of one it accepted."""
    try:
        async with websockets.connect(url, additional_headers=headers) as ws:
            with contextlib.suppress(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)
            return ws.close_reason or ""
    except websockets.InvalidStatus as exc:
        return f"HTTP {exc.response.status_code}"


def test_a_sideband_observes_and_controls_the_session(scripted_live: Any) -> None:
    async def main(address: str) -> tuple[LiveClient, LiveClient, list[str]]:
        async with httpx.AsyncClient(timeout=30) as http:
            made = await http.post(
                f"http://{address}/v1/realtime/client_secrets", headers=AUTH, json={}
            )
        secret = made.json()["value"]
        async with live_connection(address, headers=AUTH) as primary:
            started = await primary.start()
            url = f"ws://{address}/v1/live/sessions/{started['session']['id']}/attach"
            reasons = [
                await refused(url, {}),
                await refused(url, {"Authorization": f"Bearer {secret}"}),
                await refused(f"ws://{address}/v1/live/sessions/sess_nope/attach", AUTH),
            ]
            async with websockets.connect(url, additional_headers=AUTH) as ws:
                side = LiveClient(ws)
                await side.send(
                    {"type": "session.input_audio.append", "audio": "AAAA", "event_id": "a1"}
                )
                await side.wait("error")
                append = {"type": "session.instructions.append", "content": "Be brief."}
                await side.send({**append, "event_id": "i1"})
                await primary.wait("session.instructions.appended")
                await side.wait("session.instructions.appended")
                await side.send({"type": "session.close", "event_id": "bye"})
                await primary.wait("session.closed")
                await side.closed()
                return primary, side, reasons

    with scripted_live(SHORT_ANSWER, api_key=KEY) as address:
        primary, side, reasons = asyncio.run(main(address))
    assert reasons[0] == "HTTP 401"  # no key: the server's access check turns it away
    assert "API key" in reasons[1]  # a client secret opens the primary, not a sideband
    assert "sess_nope" in reasons[2]
    (error,) = side.of("error")
    assert (error["error"]["code"], error["client_event_id"]) == ("invalid_sideband_event", "a1")
    assert primary.of("session.instructions.appended")[0]["client_event_id"] == "i1"
    for client in (primary, side):
        (closed,) = client.of("session.closed")
        assert (closed["reason"], closed["client_event_id"]) == ("close_requested", "bye")
        assert client.types()[-1] == "session.closed"
    assert "session.started" not in side.types()  # it attached after
