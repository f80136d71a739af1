"""Twilio's voice webhook and Telnyx's TeXML webhook: TwiML that streams the call to us;
with an API key, only the provider's signed, fresh requests get it (Twilio's HMAC, Telnyx's
Ed25519 with a real key pair), and the stream URL's token opens one stream."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode
from xml.etree import ElementTree

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.telephony.signature import twilio_signature
from tests.app.telephony.test_telnyx_signature import keys, sign
from tests.conftest import client_with

KEY = "sk-r1voice-test-key"
AUTH_TOKEN = "twilio-auth-token-1"
PUBLIC = "https://calls.example.com"
VOICE = "/v1/telephony/twilio/voice"
TELNYX_VOICE = "/v1/telephony/telnyx/voice"
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


def test_with_a_key_only_signed_fresh_telnyx_webhooks_get_a_stream(
    shared_components: Any,
) -> None:
    private, public = keys()
    client = client_with(
        shared_components, api_key=KEY, telnyx_public_key=public, public_url=PUBLIC
    )
    body = urlencode(CALL).encode()
    now = int(time.time())

    def signed(at: int, content: bytes = body) -> dict[str, str]:
        headers = {"telnyx-signature-ed25519": sign(private, at, content)}
        return {**FORM, **headers, "telnyx-timestamp": str(at)}

    unsigned = client.post(TELNYX_VOICE, content=body, headers=FORM)
    assert unsigned.status_code == 403
    assert unsigned.json()["error"]["code"] == "invalid_telnyx_signature"
    other, _ = keys()
    forged = {**signed(now), "telnyx-signature-ed25519": sign(other, now)}
    assert client.post(TELNYX_VOICE, content=body, headers=forged).status_code == 403
    tampered = urlencode({**CALL, "From": "+15559999999"})
    assert client.post(TELNYX_VOICE, content=tampered, headers=signed(now)).status_code == 403
    stale = client.post(TELNYX_VOICE, content=body, headers=signed(now - 3600))
    assert stale.status_code == 403 and "stale" in stale.json()["error"]["message"]
    headers = signed(now)
    reply = client.post(TELNYX_VOICE, content=body, headers=headers)
    assert reply.status_code == 200
    root = ElementTree.fromstring(reply.text)
    stream = root.find("./Connect/Stream")
    assert stream is not None
    assert (stream.get("bidirectionalMode"), stream.get("bidirectionalCodec")) == ("rtp", "PCMU")
    url, params = _stream(reply.text)
    prefix = "wss://calls.example.com/v1/telephony/twilio/stream/"
    assert url.startswith(prefix) and len(url) > len(prefix) + 20
    assert params == {"CallSid": "CA0123", "From": "+15550001111", "To": "+15550002222"}
    replayed = client.post(TELNYX_VOICE, content=body, headers=headers)
    assert replayed.status_code == 403 and "replay" in replayed.json()["error"]["message"]
    # the token opens Telnyx's stream once (its start names a PCMU call)
    token_path = url.removeprefix("wss://calls.example.com")
    with client.websocket_connect(token_path) as ws:
        ws.send_json({"event": "connected", "version": "1.0.0"})
    with client.websocket_connect(token_path) as ws, pytest.raises(WebSocketDisconnect) as used:
        ws.receive_text()
    assert "already used" in used.value.reason


def test_telnyx_without_a_usable_public_key_says_what_to_set(shared_components: Any) -> None:
    private, _ = keys()
    at = str(int(time.time()))
    headers = {**FORM, "telnyx-signature-ed25519": sign(private, int(at)), "telnyx-timestamp": at}
    body = urlencode(CALL)
    missing = client_with(shared_components, api_key=KEY).post(
        TELNYX_VOICE, content=body, headers=headers
    )
    assert missing.status_code == 403
    assert missing.json()["error"]["code"] == "telnyx_public_key_missing"
    assert "R1VOICE_TELNYX_PUBLIC_KEY" in missing.json()["error"]["message"]
    bad = client_with(shared_components, api_key=KEY, telnyx_public_key="not-a-key").post(
        TELNYX_VOICE, content=body, headers=headers
    )
    assert bad.status_code == 500
    assert bad.json()["error"]["code"] == "telnyx_public_key_invalid"
    assert "base64" in bad.json()["error"]["message"]
    # without a key (a server on loopback) Telnyx's webhook answers anyone, tokenless
    open_reply = client_with(shared_components).post(TELNYX_VOICE, content=body, headers=FORM)
    assert _stream(open_reply.text)[0] == "ws://testserver/v1/telephony/twilio/stream"
