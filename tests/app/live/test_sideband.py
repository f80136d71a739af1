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


TEAM_A, TEAM_B = "sk-team-a", "sk-team-b"
TENANTS = '{"sk-team-a": "team-a", "sk-team-b": "team-b"}'


def test_a_sideband_attaches_only_to_its_own_tenants_sessions(scripted_live: Any) -> None:
    def auth(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    async def attach(url: str, key: str) -> list[str]:
        """Attach with `key`, append instructions, detach: the events it saw."""
        async with websockets.connect(url, additional_headers=auth(key)) as ws:
            side = LiveClient(ws)
            await side.send({"type": "session.instructions.append", "content": "Be brief."})
            await side.wait("session.instructions.appended")
            side._reader.cancel()
            return side.types()

    async def main(address: str) -> tuple[list[str], list[str], list[str]]:
        async with httpx.AsyncClient(timeout=30) as http:
            made = await http.post(
                f"http://{address}/v1/realtime/client_secrets", headers=auth(TEAM_B), json={}
            )
        secret_b = made.json()["value"]  # team-b's browser holds this, not the key
        async with (
            live_connection(address, headers=auth(TEAM_A)) as a,
            live_connection(address, headers=auth(secret_b)) as b,
        ):
            url_a = f"ws://{address}/v1/live/sessions/{(await a.start())['session']['id']}/attach"
            url_b = f"ws://{address}/v1/live/sessions/{(await b.start())['session']['id']}/attach"
            reasons = [
                await refused(url_a, auth(TEAM_B)),
                await refused(url_b, auth(TEAM_A)),
                await refused(url_b, auth(KEY)),  # the default tenant's key is another's too
                await refused(url_a, {}),
            ]
            seen_a, seen_b = await attach(url_a, TEAM_A), await attach(url_b, TEAM_B)
            await a.wait("session.instructions.appended")
            await b.wait("session.instructions.appended")
            return reasons, seen_a, seen_b

    with scripted_live(SHORT_ANSWER, api_key=KEY, api_keys=TENANTS) as address:
        reasons, seen_a, seen_b = asyncio.run(main(address))
    for reason in reasons[:3]:
        assert "another tenant's session" in reason and "tenant that created it" in reason
    assert reasons[3] == "HTTP 401"  # no key at all: the access check turns it away
    assert seen_a[-1] == seen_b[-1] == "session.instructions.appended"
