"""Who may use the server: with an API key set, no unauthenticated attempt gets through on
any route the app's own route table lists; Origin and Host checks; client secrets."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from app.protocol.server_events import SessionCreated
from app.server.access import CHECKS_ITS_OWN, ClientSecrets
from tests.conftest import client_with

KEY = "sk-r1voice-test-key"
OPEN = ("/v2/health/", "/v2/models/{model}/ready")


@pytest.fixture
def guarded(shared_components: Any) -> TestClient:
    return client_with(shared_components, api_key=KEY)


def http_routes(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) of every HTTP route the app lists (its OpenAPI table; the page at
    "/" is left out of it and is open by design)."""
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    return [(method.upper(), path) for path, ops in paths.items() for method in ops]


def concrete(path: str) -> str:
    return path.replace("{model}", "r1voice").replace("{name}", "r1voice")


def is_open(path: str) -> bool:
    return path.startswith(OPEN[0]) or path == OPEN[1]


def test_every_route_needs_the_key(guarded: TestClient) -> None:
    routes = http_routes(guarded)
    assert len(routes) >= 12  # the table really was read
    attempts = {
        "no key": {},
        "wrong key": {"Authorization": "Bearer sk-wrong"},
        "not bearer": {"Authorization": f"Basic {KEY}"},
        "key in another header": {"X-Api-Key": KEY},
    }
    let_through = []
    for method, path in routes:
        if is_open(path):
            continue
        for name, headers in attempts.items():
            url = concrete(path) + (f"?api_key={KEY}" if name == "no key" else "")
            reply = guarded.request(method, url, headers=headers, json={})
            if path.startswith(CHECKS_ITS_OWN):  # its caller signs it (Twilio), not our key
                if reply.status_code != 403:
                    let_through.append((name, method, path, reply.status_code))
            elif reply.status_code != 401:
                let_through.append((name, method, path, reply.status_code))
            else:
                assert reply.json()["error"]["code"] == "invalid_api_key"
    assert let_through == []
    for path in ("/metrics", "/docs", "/openapi.json"):  # open only with open_metrics
        assert guarded.get(path).status_code == 401


def test_the_key_opens_every_route(guarded: TestClient) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    assert guarded.get("/v1/models", headers=auth).status_code == 200
    assert guarded.get("/metrics", headers=auth).status_code == 200
    assert guarded.get("/v2/health/ready").status_code == 200  # probes stay open
    assert guarded.get("/v2/models/r1voice/ready").status_code == 200
    assert guarded.get("/").status_code == 200  # the page holds no secret


def test_websocket_needs_the_key_or_a_client_secret(guarded: TestClient) -> None:
    for subprotocols in ([], ["realtime", "openai-insecure-api-key.sk-wrong"]):
        with (
            pytest.raises(WebSocketDenialResponse) as refused,
            guarded.websocket_connect("/v1/realtime", subprotocols=subprotocols),
        ):
            pass
        assert refused.value.status_code == 401
    with guarded.websocket_connect(
        "/v1/realtime", subprotocols=["realtime", f"openai-insecure-api-key.{KEY}"]
    ) as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
    auth = {"Authorization": f"Bearer {KEY}"}
    with guarded.websocket_connect("/v1/realtime", headers=auth) as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
    assert guarded.post("/v1/realtime/client_secrets", json={}).status_code == 401
    minted = guarded.post(
        "/v1/realtime/client_secrets",
        headers=auth,
        json={"expires_after": {"anchor": "created_at", "seconds": 60}},
    ).json()
    assert minted["value"].startswith("ek_") and minted["expires_at"] > time.time()
    assert minted["session"]["type"] == "realtime"
    secret = ["realtime", f"openai-insecure-api-key.{minted['value']}"]
    with guarded.websocket_connect("/v1/realtime", subprotocols=secret) as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
    # a client secret opens Realtime connections only
    secret_auth = {"Authorization": f"Bearer {minted['value']}"}
    assert guarded.get("/v1/models", headers=secret_auth).status_code == 401
    # ... and WebRTC offers, a Live session's too (a browser holds only the secret): past
    # the guard, this offer is refused for what it is, not for who sent it
    offer = {"content": "v=0", "headers": {"Content-Type": "application/sdp"}}
    assert guarded.post("/v1/live/sessions", **offer).status_code == 401
    live = guarded.post(
        "/v1/live/sessions", headers={**secret_auth, **offer["headers"]}, content="v=0"
    )
    assert live.status_code == 400, live.text


def test_client_secrets_expire() -> None:
    secrets = ClientSecrets()
    value, _ = secrets.mint(60)
    assert secrets.valid(value) and not secrets.valid(value + "x")
    secrets._expiry[value] = time.time() - 1
    assert not secrets.valid(value)


def test_a_foreign_origin_cannot_open_the_websocket(shared_components: Any) -> None:
    """Bug: a page on http://evil.example opened the WebSocket and completed a turn."""
    client = client_with(shared_components)
    evil = {"Origin": "http://evil.example"}
    with (
        pytest.raises(WebSocketDenialResponse) as refused,
        client.websocket_connect("/v1/realtime", headers=evil),
    ):
        pass
    assert refused.value.status_code == 403
    assert "R1VOICE_ALLOWED_ORIGINS" in refused.value.json()["error"]["message"]
    same = {"Origin": "http://testserver"}  # the page served by this server
    with client.websocket_connect("/v1/realtime", headers=same) as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
    allowed = client_with(shared_components, allowed_origins="http://evil.example")
    with allowed.websocket_connect("/v1/realtime", headers=evil) as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE


def test_a_foreign_host_is_refused(shared_components: Any) -> None:
    """DNS rebinding: a loopback server answers only to loopback names."""
    client = client_with(shared_components, allowed_hosts="localhost,127.0.0.1,::1")
    assert client.get("/v1/models", headers={"Host": "evil.example"}).status_code == 421
    assert client.get("/v1/models", headers={"Host": "127.0.0.1:8000"}).status_code == 200
    assert client.get("/v1/models", headers={"Host": "[::1]:8000"}).status_code == 200


def test_serve_refuses_a_public_address_without_a_key() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 2
    assert "R1VOICE_API_KEY" in run.stderr and "--insecure" in run.stderr


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_refused_handshakes_reach_real_clients_and_do_not_flood_the_log(
    shared_components: Any,
) -> None:
    """Over a real uvicorn socket: a refused WebSocket gets its HTTP status and JSON body,
    and uvicorn's spurious "without completing handshake" ERROR is not logged for it."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from tests.clients.conftest import serve
    from tests.conftest import app_with

    collect = Collect()
    with serve(app_with(shared_components, api_key=KEY)) as address:
        logger = logging.getLogger("uvicorn.error")  # as uvicorn configured it
        logger.addHandler(collect)  # filters run before handlers
        try:
            for _ in range(3):
                with pytest.raises(InvalidStatus) as refused:
                    connect(f"ws://{address}/v1/realtime")
                assert refused.value.response.status_code == 401
                assert b"invalid_api_key" in refused.value.response.body
            time.sleep(0.2)
        finally:
            logger.removeHandler(collect)
    assert not [m for m in collect.messages if "completing handshake" in m]
