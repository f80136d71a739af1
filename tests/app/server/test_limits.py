"""Every limit refuses with a named error and loses nothing else: HTTP body size, one
WebSocket message, a client item's size, the conversation's items and characters, and the
number of concurrent sessions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from app.protocol.server_events import SessionCreated, ga
from tests.conftest import client_with, receive_until, user_text_item

MODEL = "smollm2-135m-instruct"


def create(ws: Any, text: str, event_id: str) -> dict[str, Any]:
    item = {"type": "conversation.item.create", "event_id": event_id, "item": user_text_item(text)}
    ws.send_text(json.dumps(item))
    return receive_until(ws, lambda e: e["type"] in ("error", ga.ITEM_ADDED))[-1]


def test_a_body_over_the_limit_is_refused_before_parsing(shared_components: Any) -> None:
    """Bug: a 50 MB body held gigabytes of memory for 30 s before its 400."""
    client = client_with(shared_components, max_body_bytes=10_000)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 20_000}]}
    reply = client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "body_too_large"
    assert "R1VOICE_MAX_BODY_BYTES" in reply.json()["error"]["message"]
    chunked = client.post(  # no content-length: counted as it arrives
        "/v1/chat/completions", content=iter([b"{" + b" " * 6000, b" " * 6000 + b"}"])
    )
    assert chunked.status_code == 413
    small = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    assert client.post("/v1/chat/completions", json=small).status_code == 200


def test_realtime_item_and_conversation_limits(shared_components: Any) -> None:
    client = client_with(
        shared_components,
        conversation_max_items=3,
        conversation_max_item_chars=1000,
        conversation_max_chars=1500,
        max_message_bytes=20_000,
    )
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        big = create(ws, "x" * 1001, "evt_big")
        assert (big["error"]["code"], big["error"]["event_id"]) == ("invalid_value", "evt_big")
        assert create(ws, "y" * 900, "evt_1")["type"] == ga.ITEM_ADDED
        full = create(ws, "z" * 700, "evt_2")  # 900 + 700 characters > 1500
        assert (full["error"]["code"], full["error"]["event_id"]) == ("conversation_full", "evt_2")
        assert create(ws, "short", "evt_3")["type"] == ga.ITEM_ADDED
        assert create(ws, "short", "evt_4")["type"] == ga.ITEM_ADDED
        full = create(ws, "one more", "evt_5")  # a fourth item
        assert full["error"]["code"] == "conversation_full"
        assert "conversation.item.delete" in full["error"]["message"]
        ws.send_text(json.dumps({"type": "conversation.item.create", "pad": "p" * 30_000}))
        oversized = receive_until(ws, lambda e: e["type"] == "error")[-1]
        assert oversized["error"]["code"] == "message_too_large"
        ws.send_text(json.dumps({"type": "conversation.item.delete", "item_id": "nope"}))
        assert receive_until(ws, lambda e: e["type"] == "error")[-1]["error"]["code"]  # alive


@pytest.mark.timeout(120)
def test_sessions_past_the_limit_are_told_to_retry(shared_components: Any) -> None:
    client: TestClient = client_with(shared_components, max_sessions=1)
    with client.websocket_connect("/v1/realtime") as first:
        first.receive_json()
        with (
            pytest.raises(WebSocketDisconnect) as refused,
            client.websocket_connect("/v1/realtime") as second,
        ):
            second.receive_json()
        assert refused.value.code == 1013
        assert "R1VOICE_MAX_SESSIONS" in refused.value.reason
    with client.websocket_connect("/v1/realtime") as again:  # room again once it left
        assert again.receive_json()["type"] == SessionCreated.TYPE


def test_one_client_over_its_request_rate_is_told_when_to_retry(shared_components: Any) -> None:
    client = client_with(shared_components, client_requests_per_s=0.5, client_burst=2)
    assert [client.get("/v1/models").status_code for _ in range(2)] == [200, 200]
    refused = client.get("/v1/models")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    assert client.get("/v2/health/ready").status_code == 200  # probes are not counted


def test_one_client_may_hold_only_so_many_sessions(shared_components: Any) -> None:
    client = client_with(shared_components, client_max_sessions=1)
    with client.websocket_connect("/v1/realtime") as first:
        first.receive_json()
        with (
            pytest.raises(WebSocketDenialResponse) as refused,
            client.websocket_connect("/v1/realtime"),
        ):
            pass
        assert refused.value.status_code == 429
        assert "R1VOICE_CLIENT_MAX_SESSIONS" in refused.value.json()["error"]["message"]


def test_phone_streams_are_not_counted_per_client_address(shared_components: Any) -> None:
    """A phone provider streams every call from a few addresses of its own: the limit per
    address would turn a busy number's callers away (its streams are checked by their
    signed, single-use URLs instead, and count toward R1VOICE_MAX_CONNECTIONS)."""
    client = client_with(shared_components, client_max_sessions=1)
    with client.websocket_connect("/v1/realtime") as first:
        first.receive_json()
        for _ in range(2):  # each reaches the stream's own checks: media before `start`
            with client.websocket_connect("/v1/telephony/twilio/stream") as call:
                call.send_json({"event": "connected", "protocol": "Call", "version": "1.0.0"})
                call.send_json({"event": "media", "media": {"payload": ""}})
                with pytest.raises(WebSocketDisconnect) as closed:
                    call.receive_json()
            assert closed.value.code == 1008 and "before `start`" in closed.value.reason


@pytest.mark.parametrize(
    ("setting", "code"),
    [("session_idle_timeout_s", "session_idle_timeout"), ("session_max_s", "session_expired")],
)
def test_idle_and_old_sessions_are_closed_saying_why(
    shared_components: Any, setting: str, code: str
) -> None:
    client = client_with(shared_components, **{setting: 1})
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        error = receive_until(ws, lambda e: e["type"] == "error")[-1]
        assert error["error"]["code"] == code
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1000
