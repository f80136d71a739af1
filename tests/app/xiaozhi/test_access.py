"""The OTA check-in and who may open a device's WebSocket: the token the OTA answer
issued for the Device-Id (with an API key set), and the Device-Id allowlist."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from fastapi.testclient import TestClient

from app.xiaozhi.tokens import DeviceAccess
from bench.voice.xiaozhi_board import Board, hello
from tests.conftest import app_with, client_with, run_live

KEY = "sk-test-key"
DEVICE = "aa:bb:cc:dd:ee:01"
OTHER = "aa:bb:cc:dd:ee:02"


def check_in(client: TestClient, device_id: str = DEVICE) -> Any:
    headers = {"Device-Id": device_id, "Client-Id": "c0ffee00-0000-4000-8000-000000000001"}
    body = {"application": {"name": "xiaozhi", "version": "2.0.0"}, "mac_address": device_id}
    return client.post("/xiaozhi/ota/", json=body, headers=headers)


def test_the_ota_answer_gives_the_time_and_the_websocket(shared_components: Any) -> None:
    answer = check_in(client_with(shared_components))
    assert answer.status_code == 200
    body = answer.json()
    assert body["websocket"] == {"url": "ws://testserver/xiaozhi/v1/", "token": ""}
    assert body["server_time"]["timestamp"] > 1_700_000_000_000
    assert "firmware" not in body  # no update offered


def test_a_public_url_is_the_websocket_the_ota_answer_names(shared_components: Any) -> None:
    client = client_with(shared_components, public_url="https://voice.example.com/")
    assert check_in(client).json()["websocket"]["url"] == "wss://voice.example.com/xiaozhi/v1/"


def test_tokens_are_tied_to_their_device_and_expire() -> None:
    access = DeviceAccess(KEY, "")
    token = access.issue(DEVICE, now=1000.0)
    assert access.token_refusal(DEVICE, token, now=1000.0) is None
    assert access.token_refusal(DEVICE.upper(), token, now=1000.0) is None
    assert "not issued to device" in str(access.token_refusal(OTHER, token, now=1000.0))
    assert "expired" in str(access.token_refusal(DEVICE, token, now=1000.0 + 31 * 86400))
    assert "token is required" in str(access.token_refusal(DEVICE, "", now=1000.0))
    assert DeviceAccess("", "").token_refusal(DEVICE, "") is None  # no key: open


@pytest.fixture(scope="module")
def keyed(shared_components: Any) -> Iterator[tuple[TestClient, str]]:
    settings = {"api_key": KEY, "xiaozhi_devices": f"{DEVICE},{OTHER}"}
    app = app_with(shared_components, **settings)
    for address in run_live(app):
        yield TestClient(app), address


def test_with_a_key_a_device_needs_the_token_issued_for_it(keyed: Any) -> None:
    client, address = keyed
    token = check_in(client).json()["websocket"]["token"]
    assert token
    other_token = check_in(client, OTHER).json()["websocket"]["token"]

    async def attempts() -> tuple[dict[str, Any], str, str]:
        good = Board(address, token=token)
        hello = await good.connect()
        await good.close()
        stolen = Board(address, token=other_token)
        none = Board(address)
        reasons = []
        for board in (stolen, none):
            with pytest.raises(Exception):  # noqa: B017 (closed before the hello reply)
                await board.connect()
            reasons.append(str(board._ws.close_reason if board._ws else ""))
        return hello, *reasons  # type: ignore[return-value]

    hello, _, _ = asyncio.run(attempts())
    assert hello["type"] == "hello"
    metrics = client.get("/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    assert 'r1voice_transport_errors_total{code="unauthorized",transport="xiaozhi"} 2.0' in metrics
    assert 'r1voice_sessions_total{transport="xiaozhi"} 1.0' in metrics


def test_a_browser_test_page_passes_the_headers_as_query_parameters(keyed: Any) -> None:
    client, address = keyed
    token = check_in(client).json()["websocket"]["token"]
    query = f"device-id={DEVICE}&client-id=c1&protocol-version=3&authorization=Bearer%20{token}"

    async def run() -> dict[str, Any]:
        async with websockets.connect(f"ws://{address}/xiaozhi/v1/?{query}") as ws:
            await ws.send(json.dumps(hello(version=3)))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))  # type: ignore[no-any-return]

    answer = asyncio.run(run())
    assert answer["type"] == "hello" and answer["session_id"].startswith("sess_")


def test_a_device_not_in_the_allowlist_gets_no_token(keyed: Any) -> None:
    client, _ = keyed
    answer = check_in(client, "aa:bb:cc:dd:ee:99")
    assert answer.status_code == 403
    assert "R1VOICE_XIAOZHI_DEVICES" in answer.json()["error"]
