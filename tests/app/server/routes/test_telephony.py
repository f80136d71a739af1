"""Twilio's voice webhook: TwiML that streams the call to us; with an API key, only
Twilio's signed, fresh requests get it, and the stream URL's token opens one stream."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from xml.etree import ElementTree

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.telephony.signature import twilio_signature
from tests.conftest import client_with

KEY = "sk-r1voice-test-key"
AUTH_TOKEN = "twilio-auth-token-1"
PUBLIC = "https://calls.example.com"
VOICE = "/v1/telephony/twilio/voice"
CALL = {"CallSid": "CA0123", "From": "+15550001111", "To": "+15550002222", "AccountSid": "AC9"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _stream(twiml: str) -> tuple[str, dict[str, str]]:
    """The <Stream> url and its <Parameter>s, read as XML."""
    root = ElementTree.fromstring(twiml)
    assert root.tag == "Response"
    stream = root.find("./Connect/Stream")
    assert stream is not None, twiml
    params = {p.get("name", ""): p.get("value", "") for p in stream.findall("Parameter")}
    return stream.get("url", ""), params


def test_the_webhook_answers_twiml_from_the_requests_host(shared_components: Any) -> None:
    client = client_with(shared_components)
    reply = client.post(VOICE, content=urlencode(CALL), headers=FORM)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/xml")
    url, params = _stream(reply.text)
    assert url == "ws://testserver/v1/telephony/twilio/stream"
    assert params == {"CallSid": "CA0123", "From": "+15550001111", "To": "+15550002222"}
    behind_tunnel = {**FORM, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "a.ngrok.app"}
    reply = client.post(VOICE, content=urlencode(CALL), headers=behind_tunnel)
    assert _stream(reply.text)[0] == "wss://a.ngrok.app/v1/telephony/twilio/stream"


@pytest.fixture
def guarded(shared_components: Any) -> TestClient:
    return client_with(
        shared_components, api_key=KEY, twilio_auth_token=AUTH_TOKEN, public_url=PUBLIC
    )


def _signed(call: dict[str, str], token: str = AUTH_TOKEN) -> dict[str, str]:
    return {**FORM, "X-Twilio-Signature": twilio_signature(token, PUBLIC + VOICE, call)}


def test_with_a_key_only_signed_fresh_webhooks_get_a_stream(guarded: TestClient) -> None:
    body = urlencode(CALL)
    unsigned = guarded.post(VOICE, content=body, headers=FORM)
    assert unsigned.status_code == 403
    assert unsigned.json()["error"]["code"] == "invalid_twilio_signature"
    wrong = guarded.post(VOICE, content=body, headers=_signed(CALL, "not-the-token"))
    assert wrong.status_code == 403 and "R1VOICE_TWILIO_AUTH_TOKEN" in wrong.text
    tampered = guarded.post(
        VOICE, content=urlencode({**CALL, "From": "+15559999999"}), headers=_signed(CALL)
    )
    assert tampered.status_code == 403
    reply = guarded.post(VOICE, content=body, headers=_signed(CALL))
    assert reply.status_code == 200
    url, params = _stream(reply.text)
    prefix = "wss://calls.example.com/v1/telephony/twilio/stream/"
    assert url.startswith(prefix) and len(url) > len(prefix) + 20
    assert params["CallSid"] == "CA0123"
    replayed = guarded.post(VOICE, content=body, headers=_signed(CALL))
    assert replayed.status_code == 403 and "replay" in replayed.json()["error"]["message"]
    # the stream opens with the token, once; without one or with a used one it is closed
    token_path = url.removeprefix("wss://calls.example.com")
    for path in ("/v1/telephony/twilio/stream", token_path + "x"):
        with guarded.websocket_connect(path) as ws, pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
        assert closed.value.code == 1008 and "token" in closed.value.reason
    with guarded.websocket_connect(token_path) as ws:
        ws.send_json({"event": "connected", "protocol": "Call", "version": "1.0.0"})
    with guarded.websocket_connect(token_path) as ws, pytest.raises(WebSocketDisconnect) as used:
        ws.receive_text()
    assert "already used" in used.value.reason


def test_with_a_key_and_no_auth_token_the_webhook_says_what_to_set(
    shared_components: Any,
) -> None:
    client = client_with(shared_components, api_key=KEY)
    reply = client.post(VOICE, content=urlencode(CALL), headers=_signed(CALL))
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "twilio_auth_token_missing"


def test_a_server_not_ready_tells_the_caller_and_hangs_up(shared_components: Any) -> None:
    client = client_with(shared_components)
    client.app.state.server.ready = False  # type: ignore[attr-defined]
    reply = client.post(VOICE, content=urlencode(CALL), headers=FORM)
    assert reply.status_code == 200
    root = ElementTree.fromstring(reply.text)
    assert [child.tag for child in root] == ["Say", "Hangup"]
    assert "call again" in (root.findtext("Say") or "")
