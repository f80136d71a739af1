"""The Live WebSocket's handshake as a browser makes it: the page offers the `realtime`
subprotocol and a client secret (a browser cannot send an Authorization header), and a
handshake that echoes no subprotocol is one a browser fails."""

from __future__ import annotations

import json
from typing import Any

import httpx
from websockets.sync.client import connect

from tests.clients.conftest import serve
from tests.conftest import app_with

KEY = "sk-live-page"


def test_a_browser_opens_a_live_session_with_a_client_secret(shared_components: Any) -> None:
    with serve(app_with(shared_components, api_key=KEY)) as address:
        minted = httpx.post(
            f"http://{address}/v1/realtime/client_secrets",
            headers={"Authorization": f"Bearer {KEY}"},
            json={},
        )
        secret = minted.json()["value"]
        offered = ["realtime", f"openai-insecure-api-key.{secret}"]
        with connect(f"ws://{address}/v1/live/sessions", subprotocols=offered) as ws:  # type: ignore[arg-type]
            assert ws.subprotocol == "realtime"  # never the secret
            ws.send(json.dumps({"type": "session.start", "session": {"model": "gpt-live-1"}}))
            started = json.loads(ws.recv(timeout=60))
            assert started["type"] == "session.started"
            ws.send(json.dumps({"type": "session.close"}))
            assert json.loads(ws.recv(timeout=60))["type"] == "session.closed"
