"""Per-client limits: a request rate (a token bucket per client address) and a number of
Realtime sessions open at once. A client over either gets `429 rate_limited` with the
seconds to wait in `Retry-After`, before any route runs; other clients do not notice.
Health probes are not counted, nor phone streams and their webhooks: a provider sends
every call from a few addresses of its own (they are checked by Twilio's signature and
single-use stream URLs instead, and count toward R1VOICE_MAX_CONNECTIONS). Both limits
off with 0.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from app.server.access import ASGIApp, Receive, Scope, Send, send_refusal

UNCOUNTED = ("/v2/health/", "/health", "/v1/telephony/")
MAX_CLIENTS = 10_000  # buckets kept; the idlest are forgotten past this


@dataclass
class Bucket:
    tokens: float
    at: float


class ClientRates:
    """ASGI middleware applying per-client-address request and session limits."""

    def __init__(self, app: ASGIApp, requests_per_s: float, burst: int, sessions: int) -> None:
        self.app, self.rate, self.burst, self.max_sessions = app, requests_per_s, burst, sessions
        self._buckets: dict[str, Bucket] = {}
        self._sessions: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"].startswith(UNCOUNTED):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        wait = self._take(client)
        if wait > 0:
            message = (
                f"too many requests from {client}: at most {self.rate:g}/s "
                f"(R1VOICE_CLIENT_REQUESTS_PER_S); retry in {wait:.1f} s"
            )
            await self._refuse(scope, receive, send, message, wait)
            return
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        if self.max_sessions and self._sessions.get(client, 0) >= self.max_sessions:
            message = (
                f"{client} has {self.max_sessions} Realtime sessions open "
                "(R1VOICE_CLIENT_MAX_SESSIONS); close one first"
            )
            await self._refuse(scope, receive, send, message, 1.0)
            return
        self._sessions[client] = self._sessions.get(client, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._sessions[client] -= 1
            if not self._sessions[client]:
                del self._sessions[client]

    def _take(self, client: str) -> float:
        """Take one request token; returns 0, or the seconds until one is available."""
        if not self.rate:
            return 0.0
        now = time.monotonic()
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) >= MAX_CLIENTS:
                idlest = min(self._buckets, key=lambda k: self._buckets[k].at)
                del self._buckets[idlest]
            bucket = self._buckets[client] = Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.rate

    @staticmethod
    async def _refuse(
        scope: Scope, receive: Receive, send: Send, message: str, wait: float
    ) -> None:
        if scope["type"] == "websocket":
            await receive()  # the handshake's websocket.connect
        error = {"message": message, "type": "rate_limit_error", "code": "rate_limited"}
        headers = [(b"retry-after", str(max(1, math.ceil(wait))).encode())]
        await send_refusal(scope, send, 429, error, headers, close_code=1013)
