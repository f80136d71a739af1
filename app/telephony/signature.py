"""Who may start a call's stream: Twilio's webhook signature, and the stream's token.

Twilio signs each webhook with the account's auth token: `X-Twilio-Signature` is the
base64 HMAC-SHA1 of the full URL it requested followed by every POST parameter's name
and value, sorted by name. The signature carries no time, so a captured request could be
sent again: a signature seen in the last `REPLAY_WINDOW_S` is refused.

The stream's WebSocket comes from Twilio's media servers, which send no key of ours:
the webhook's answer puts a short-lived, single-use token in the stream URL's path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

REPLAY_WINDOW_S = 600.0  # Twilio retries a webhook within seconds; a replay comes later
TOKEN_TTL_S = 60.0  # Twilio opens the stream right after the TwiML answer


def twilio_signature(auth_token: str, url: str, params: Mapping[str, str]) -> str:
    """The `X-Twilio-Signature` Twilio sends for a POST of `params` to `url`."""
    data = url + "".join(name + params[name] for name in sorted(params))
    digest = hmac.new(auth_token.encode(), data.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def _spellings(url: str) -> list[str]:
    """`url`, and it with its scheme's default port written or left out: Twilio signs the
    URL as configured, and a proxy may hand it on the other way (as Twilio's own
    validators try both)."""
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    if default is None or not parts.hostname or parts.port not in (None, default):
        return [url]
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    other = host if parts.port is not None else f"{host}:{default}"
    return [url, urlunsplit(parts._replace(netloc=other))]


class WebhookGuard:
    """Checks webhooks' signatures and refuses one seen before (a replay)."""

    def __init__(self, auth_token: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._token, self._clock = auth_token, clock
        self._seen: dict[str, float] = {}  # signature -> when it was first accepted

    def refusal(self, url: str, params: Mapping[str, str], signature: str) -> str | None:
        """Why the request is refused, or None when it is Twilio's, and new."""
        if not signature:
            return "the request has no X-Twilio-Signature; only Twilio may call this webhook"
        signed = (twilio_signature(self._token, u, params) for u in _spellings(url))
        if not any(hmac.compare_digest(s.encode(), signature.encode()) for s in signed):
            return (
                f"X-Twilio-Signature does not match the request to {url} (is "
                "R1VOICE_TWILIO_AUTH_TOKEN the account's auth token, and R1VOICE_PUBLIC_URL "
                "the address Twilio calls?)"
            )
        now = self._clock()
        self._seen = {s: t for s, t in self._seen.items() if now - t < REPLAY_WINDOW_S}
        if signature in self._seen:
            return "this signed request was already answered (a replay); refused"
        self._seen[signature] = now
        return None


class StreamTokens:
    """Single-use tokens for stream URLs, valid `ttl_s` after they are made."""

    def __init__(
        self, secret: str, ttl_s: float = TOKEN_TTL_S, clock: Callable[[], float] = time.time
    ) -> None:
        self._secret, self._ttl, self._clock = secret.encode(), ttl_s, clock
        self._used: dict[str, float] = {}  # nonce -> its expiry

    def _mac(self, body: str) -> str:
        digest = hmac.new(self._secret, body.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode("ascii")

    def mint(self) -> str:
        body = f"{int(self._clock() + self._ttl)}.{secrets.token_urlsafe(12)}"
        return f"{body}.{self._mac(body)}"

    def refusal(self, token: str) -> str | None:
        """Why `token` opens no stream (and from now on none), or None: it is redeemed."""
        body, _, mac = token.rpartition(".")
        expires, _, nonce = body.partition(".")
        if not (body and expires.isdigit() and nonce):
            return "the stream URL's token is malformed; use the URL the voice webhook answered"
        if not hmac.compare_digest(self._mac(body).encode(), mac.encode()):
            return "the stream URL's token is not this server's"
        now = self._clock()
        if int(expires) < now:
            return "the stream URL's token has expired; each call's webhook makes a new one"
        self._used = {n: t for n, t in self._used.items() if t >= now}
        if nonce in self._used:
            return "the stream URL's token was already used (each opens one stream)"
        self._used[nonce] = int(expires)
        return None
