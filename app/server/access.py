"""Who may use the server: API key, short-lived client secrets, Host and Origin checks.

One ASGI middleware guards every route, HTTP and WebSocket alike, so a route added later
is covered without anyone remembering to. With `R1VOICE_API_KEY` set, a request needs it
as `Authorization: Bearer <key>`; a WebSocket may instead offer the subprotocol
`openai-insecure-api-key.<key>` (browsers cannot set headers) and may use a client secret
from `POST /v1/realtime/client_secrets` in place of the key. Health probes stay open; the
page's static files are open (they hold no secret); /metrics and the API docs follow
`open_metrics`. A WebRTC offer (`POST /v1/realtime/calls`, `/v1/live/sessions`) takes a client secret as its
bearer token, as OpenAI's does. The Host check stops DNS rebinding of a loopback server; the Origin check
stops other web pages a user visits from using it through their browser.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from app.server.tenants import BY_SECRET, DEFAULT, TENANT, tenant_keys
from app.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_SUBPROTOCOL = "openai-insecure-api-key."
ALWAYS_OPEN = ("/v2/health/",)
# Twilio signs its webhook and the stream URL has a token; xiaozhi devices show the token
# their OTA check-in issued (app/xiaozhi/tokens.py)
CHECKS_ITS_OWN = ("/v1/telephony/", "/xiaozhi/")
PAGE = ("/web/", "/static/")
DOCS_AND_METRICS = ("/metrics", "/docs", "/redoc", "/openapi.json")
# WebRTC offers (Realtime calls, Live sessions): a client secret opens them too, as a
# browser holds only that
CALLS_PATHS = ("/v1/realtime/calls", "/v1/live/sessions")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass
class ClientSecrets:
    """Short-lived keys for one Realtime connection each (OpenAI's ephemeral keys)."""

    _expiry: dict[str, float] = field(default_factory=dict)
    _tenants: dict[str, str] = field(default_factory=dict)  # the minting key's tenant

    def mint(self, seconds: int, tenant: str = DEFAULT) -> tuple[str, int]:
        """A new secret and its expiry (unix seconds)."""
        now = time.time()
        self._expiry = {k: t for k, t in self._expiry.items() if t > now}  # forget stale ones
        self._tenants = {k: t for k, t in self._tenants.items() if k in self._expiry}
        value = "ek_" + secrets.token_urlsafe(24)
        self._expiry[value] = now + seconds
        self._tenants[value] = tenant
        return value, int(now + seconds)

    def tenant(self, value: str) -> str | None:
        """The tenant a valid secret was minted for (None: not a valid secret)."""
        return self._tenants.get(value, DEFAULT) if self.valid(value) else None

    def valid(self, value: str) -> bool:
        expiry = self._expiry.get(value)
        return expiry is not None and expiry > time.time()


@dataclass(frozen=True)
class AccessPolicy:
    api_key: str = ""
    open_metrics: bool = False
    allowed_hosts: tuple[str, ...] = ("*",)  # Host header names; "*": any
    allowed_origins: tuple[str, ...] = ()  # besides the server's own origin; "*": any
    keys: dict[str, str] = field(default_factory=dict)  # every API key -> its tenant

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessPolicy:
        def names(value: str) -> tuple[str, ...]:
            return tuple(v.strip().lower() for v in value.split(",") if v.strip())

        hosts = names(settings.allowed_hosts)
        origins = tuple(o.rstrip("/") for o in names(settings.allowed_origins))
        keys = tenant_keys(settings)
        return cls(settings.api_key, settings.open_metrics, hosts, origins, keys)

    def host_allowed(self, host: str) -> bool:
        return "*" in self.allowed_hosts or _hostname(host) in self.allowed_hosts

    def origin_allowed(self, origin: str, host: str) -> bool:
        origin = origin.lower().rstrip("/")
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        netloc = urlsplit(origin).netloc
        return bool(host) and netloc == host.lower()  # same origin ("null" never is)

    def needs_key(self, path: str) -> bool:
        if (
            not (self.api_key or self.keys)
            or path == "/"
            or path.startswith(ALWAYS_OPEN + PAGE + CHECKS_ITS_OWN)
        ):
            return False
        if path.startswith("/v2/models/") and path.endswith("/ready"):  # KServe readiness
            return False
        return not (self.open_metrics and path.startswith(DOCS_AND_METRICS))


def _hostname(host: str) -> str:
    """ "example.com:8000" -> "example.com"; "[::1]:8000" -> "::1"."""
    if host.startswith("["):
        return host[1 : host.find("]")].lower()
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


class AccessGuard:
    """The ASGI middleware that applies an AccessPolicy to every request."""

    def __init__(self, app: ASGIApp, policy: AccessPolicy, client_secrets: ClientSecrets) -> None:
        self.app, self.policy, self.client_secrets = app, policy, client_secrets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self._refusal(scope)
            if refusal is not None:
                if scope["type"] == "websocket":
                    await receive()  # the handshake's websocket.connect comes first
                await _refuse(scope, send, *refusal)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.policy.host_allowed(host):
            return (
                421,
                "host_not_allowed",
                (f"Host {host!r} is not served here: add it to R1VOICE_ALLOWED_HOSTS"),
            )
        origin = headers.get("origin")
        if origin and not self.policy.origin_allowed(origin, host):
            return (
                403,
                "origin_not_allowed",
                (f"Origin {origin!r} may not use this server: add it to R1VOICE_ALLOWED_ORIGINS"),
            )
        if self.policy.needs_key(scope["path"]) and not self._authorized(scope, headers):
            where = "Authorization: Bearer <key>"
            if scope["type"] == "websocket":
                where += f", the subprotocol {KEY_SUBPROTOCOL}<key> or a client secret"
            elif scope["path"] in CALLS_PATHS:
                where += " or a client secret"
            return 401, "invalid_api_key", f"a valid API key is required ({where})"
        return None

    def _authorized(self, scope: Scope, headers: dict[str, str]) -> bool:
        offered = []
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            offered.append(bearer[7:].strip())
        if scope["type"] == "websocket":
            offered += [
                p[len(KEY_SUBPROTOCOL) :]
                for p in scope.get("subprotocols", [])
                if p.startswith(KEY_SUBPROTOCOL)
            ]
        keys = self.policy.keys or {self.policy.api_key: DEFAULT}
        for value in offered:
            for key, tenant in keys.items():
                if hmac.compare_digest(value.encode(), key.encode()):
                    scope[TENANT] = tenant
                    return True
            realtime = scope["type"] == "websocket" or scope["path"] in CALLS_PATHS
            minted_for = self.client_secrets.tenant(value) if realtime else None
            if minted_for is not None:
                scope[TENANT], scope[BY_SECRET] = minted_for, True
                return True
        return False


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
    headers = [(b"www-authenticate", b"Bearer")] if status == 401 else []
    kind = "invalid_request_error"
    await send_refusal(
        scope, send, status, {"message": message, "type": kind, "code": code}, headers
    )


async def send_refusal(
    scope: Scope,
    send: Send,
    status: int,
    error: dict[str, Any],
    headers: list[tuple[bytes, bytes]],
    close_code: int = 1008,
) -> None:
    """An OpenAI-style error response, over HTTP or as a refused WebSocket handshake (the
    websocket.http.response extension; a server without it gets a close with a reason)."""
    body = json.dumps({"error": {"param": None, **error}}).encode()
    headers = [(b"content-type", b"application/json"), *headers]
    if scope["type"] == "websocket":
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send(
                {"type": "websocket.close", "code": close_code, "reason": error["message"][:120]}
            )
            return
        DeniedHandshakeLog.pending += 1
        kind = "websocket.http.response"
    else:
        kind = "http.response"
    await send({"type": f"{kind}.start", "status": status, "headers": headers})
    await send({"type": f"{kind}.body", "body": body})


class DeniedHandshakeLog(logging.Filter):
    """uvicorn's websockets-sansio protocol (0.54) delivers a denial response correctly,
    then logs "ASGI callable returned without completing handshake" at ERROR. Drops
    exactly one such line per denial sent, so a refused flood does not flood the log
    and a real missing handshake is still reported."""

    pending = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if DeniedHandshakeLog.pending and str(record.msg).startswith(
            "ASGI callable returned without completing handshake"
        ):
            DeniedHandshakeLog.pending -= 1
            return False
        return True

    @classmethod
    def install(cls) -> None:
        logger = logging.getLogger("uvicorn.error")
        if not any(isinstance(f, cls) for f in logger.filters):
            logger.addFilter(cls())
