"""Telnyx's webhook signature: Ed25519 over the timestamp and the raw body.

Telnyx signs every webhook with its account's Ed25519 key: `telnyx-signature-ed25519` is
the base64 signature of `<telnyx-timestamp>|<raw body>`, and `telnyx-timestamp` the Unix
seconds it was signed at. The account's public key (base64, 32 bytes; Mission Control >
Keys & Credentials > Public Key) checks it. A request signed outside `TOLERANCE_S` of our
clock is refused, and so is a signature seen before within it (a replay).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TOLERANCE_S = 300.0  # Telnyx's SDKs' default: a timestamp this far off is refused


def public_key(text: str) -> Ed25519PublicKey:
    """The account's public key from its base64 form (ValueError naming the setting)."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError(
            "R1VOICE_TELNYX_PUBLIC_KEY must be the Telnyx account's public key in base64 "
            "(32 bytes; Mission Control > Keys & Credentials > Public Key)"
        )
    return Ed25519PublicKey.from_public_bytes(raw)


class TelnyxGuard:
    """Checks Telnyx webhooks' signatures and times, and refuses one seen before."""

    def __init__(self, key: str, clock: Callable[[], float] = time.time) -> None:
        self._key, self._clock = public_key(key), clock
        self._seen: dict[str, float] = {}  # signature -> the timestamp it was signed at

    def refusal(self, body: bytes, signature: str, timestamp: str) -> str | None:
        """Why the request is refused, or None when Telnyx signed it, lately, once."""
        if not signature or not timestamp:
            return (
                "the request has no telnyx-signature-ed25519 and telnyx-timestamp; only "
                "Telnyx may call this webhook"
            )
        if not timestamp.isdigit():
            return f"telnyx-timestamp {timestamp[:20]!r} is not Unix seconds"
        try:
            signed = base64.b64decode(signature, validate=True)
            self._key.verify(signed, timestamp.encode() + b"|" + body)
        except (binascii.Error, ValueError, InvalidSignature):
            return (
                "telnyx-signature-ed25519 does not match the request (is "
                "R1VOICE_TELNYX_PUBLIC_KEY the account's public key?)"
            )
        now, at = self._clock(), int(timestamp)
        if abs(now - at) > TOLERANCE_S:
            return f"the request was signed {now - at:.0f} s from now; refused as stale"
        self._seen = {s: t for s, t in self._seen.items() if now - t <= TOLERANCE_S}
        if signature in self._seen:
            return "this signed request was already answered (a replay); refused"
        self._seen[signature] = at
        return None
