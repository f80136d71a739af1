"""Telnyx's webhook signature, checked with a real Ed25519 key pair: Ed25519 over
`<timestamp>|<raw body>`, a stale timestamp and a replay refused, a bad key named."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from app.telephony.telnyx_signature import TOLERANCE_S, TelnyxGuard, public_key

BODY = b"CallSid=v3%3Aabc&From=%2B15550001111&To=%2B15550002222"
NOW = 1_765_000_000


def keys() -> tuple[Ed25519PrivateKey, str]:
    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return private, base64.b64encode(raw).decode()


def sign(private: Ed25519PrivateKey, timestamp: int, body: bytes = BODY) -> str:
    return base64.b64encode(private.sign(f"{timestamp}|".encode() + body)).decode()


def test_a_signature_of_the_timestamp_and_body_is_taken_once() -> None:
    private, public = keys()
    now = [float(NOW)]
    guard = TelnyxGuard(public, clock=lambda: now[0])
    signature = sign(private, NOW)
    assert guard.refusal(BODY, signature, str(NOW)) is None
    now[0] += 5
    assert "replay" in (guard.refusal(BODY, signature, str(NOW)) or "")
    fresh = sign(private, NOW + 5)
    assert guard.refusal(BODY, fresh, str(NOW + 5)) is None  # Telnyx's retry is signed anew


def test_what_telnyx_did_not_sign_is_refused() -> None:
    private, public = keys()
    guard = TelnyxGuard(public, clock=lambda: float(NOW))
    signature = sign(private, NOW)
    assert "no telnyx-signature" in (guard.refusal(BODY, "", str(NOW)) or "")
    assert "no telnyx-signature" in (guard.refusal(BODY, signature, "") or "")
    assert "does not match" in (guard.refusal(BODY + b"&x=1", signature, str(NOW)) or "")
    assert "does not match" in (guard.refusal(BODY, signature, str(NOW + 1)) or "")
    assert "does not match" in (guard.refusal(BODY, "not base64!", str(NOW)) or "")
    other, _ = keys()
    assert "R1VOICE_TELNYX_PUBLIC_KEY" in (guard.refusal(BODY, sign(other, NOW), str(NOW)) or "")
    assert "Unix seconds" in (guard.refusal(BODY, signature, "yesterday") or "")


def test_a_stale_or_future_timestamp_is_refused_though_signed() -> None:
    private, public = keys()
    guard = TelnyxGuard(public, clock=lambda: float(NOW))
    old, ahead = NOW - int(TOLERANCE_S) - 1, NOW + int(TOLERANCE_S) + 1
    assert "stale" in (guard.refusal(BODY, sign(private, old), str(old)) or "")
    assert "stale" in (guard.refusal(BODY, sign(private, ahead), str(ahead)) or "")
    edge = NOW - int(TOLERANCE_S)
    assert guard.refusal(BODY, sign(private, edge), str(edge)) is None


@pytest.mark.parametrize("text", ["", "not base64", base64.b64encode(b"x" * 31).decode()])
def test_a_key_that_is_not_32_bytes_of_base64_names_the_setting(text: str) -> None:
    with pytest.raises(ValueError, match="R1VOICE_TELNYX_PUBLIC_KEY"):
        public_key(text)
