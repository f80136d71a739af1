"""Server events about the session itself: its settings, refusals and limits."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionCreated(ServerEvent):
    """The first event of every session: its settings (`session`, already in the client's
    dialect: Session.session_object)."""

    TYPE = "session.created"
    session: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionUpdated(ServerEvent):
    """The reply to an accepted `session.update`: the whole session as it now is."""

    TYPE = "session.updated"
    session: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class Error(ServerEvent):
    """Something was refused or failed; the session goes on.

    `code` is the Realtime error code, `message` says what was wrong and what to do,
    `param` names the offending field, `client_event_id` the client event refused.
    `kind` is OpenAI's error type: `invalid_request_error` (the client's to fix) or
    `server_error`.
    """

    TYPE = "error"
    code: str
    message: str
    param: str | None = None
    client_event_id: str | None = None
    kind: str = "invalid_request_error"

    def fields(self) -> Wire:
        return {
            "error": {
                "type": self.kind,
                "code": self.code,
                "message": self.message,
                "param": self.param,
                "event_id": self.client_event_id,
            }
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class RateLimitsUpdated(ServerEvent):
    """At the start of a response. r1voice has no request quota; its one limit is the
    model's context: what the conversation may still grow by once this response's prompt
    and its reserved `max_output_tokens` are counted."""

    TYPE = "rate_limits.updated"
    context_tokens: int
    remaining_tokens: int

    def fields(self) -> Wire:
        limit = {"name": "tokens", "limit": self.context_tokens, "remaining": self.remaining_tokens}
        return {"rate_limits": [{**limit, "reset_seconds": 0.0}]}
