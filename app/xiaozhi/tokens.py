"""Device tokens: what the OTA answer issues a device and its WebSocket must show.

A token is tied to one Device-Id and expires; it is an HMAC under the server's API key,
so nothing is stored and a restart keeps devices connected. Without an API key the
server is open (as every other route is) and any token, or none, is accepted.
"""

from __future__ import annotations

import hashlib
import hmac
import time

TOKEN_TTL_S = 30 * 24 * 3600  # a device checks in at every boot; a month covers an idle one


class DeviceAccess:
    def __init__(self, api_key: str, allowed: str) -> None:
        """`allowed`: comma-separated Device-Ids (MAC addresses), any case; empty: any."""
        self._key = api_key.encode()
        self._allowed = {d.strip().lower() for d in allowed.split(",") if d.strip()}

    def refusal(self, device_id: str) -> str | None:
        """Why `device_id` may not use the server, or None if it may."""
        if not device_id:
            return "the Device-Id header (or device-id query parameter) is missing"
        if self._allowed and device_id.lower() not in self._allowed:
            return f"device {device_id} is not in R1VOICE_XIAOZHI_DEVICES"
        return None

    def issue(self, device_id: str, now: float | None = None) -> str:
        """A token for `device_id` (empty when the server has no API key)."""
        if not self._key:
            return ""
        expiry = int((time.time() if now is None else now) + TOKEN_TTL_S)
        return f"{expiry}.{self._sign(device_id, expiry)}"

    def token_refusal(self, device_id: str, token: str, now: float | None = None) -> str | None:
        """Why `token` does not open the WebSocket for `device_id`, or None if it does."""
        if not self._key:
            return None
        if hmac.compare_digest(token.encode(), self._key):
            return None  # the API key itself (a test bench, a server-side bridge)
        expiry, _, signature = token.partition(".")
        if not expiry.isdigit() or not signature:
            return "a device token is required: take the one POST /xiaozhi/ota/ answers"
        if not hmac.compare_digest(signature, self._sign(device_id, int(expiry))):
            return f"the token was not issued to device {device_id}; check in at /xiaozhi/ota/"
        if int(expiry) < (time.time() if now is None else now):
            return "the token has expired; check in at /xiaozhi/ota/ for a new one"
        return None

    def _sign(self, device_id: str, expiry: int) -> str:
        message = f"xiaozhi|{device_id.lower()}|{expiry}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()
