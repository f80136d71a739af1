"""Why a new Realtime session cannot start now, for either transport.

The WebSocket is accepted and closed with `ws_code` and the message; `POST
/v1/realtime/calls` answers `http_status` with an OpenAI-style error.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import status

from app.server.state import ServerState


@dataclass(frozen=True)
class Refusal:
    ws_code: int
    http_status: int
    code: str
    message: str

    @classmethod
    def of(cls, state: ServerState) -> Refusal | None:
        """Why no session may start now, or None."""
        if not state.ready or state.components is None:
            return cls(
                status.WS_1013_TRY_AGAIN_LATER,
                503,
                "server_warming_up",
                "server is warming up; retry shortly",
            )
        if state.drain.draining:
            return cls(
                status.WS_1001_GOING_AWAY,
                503,
                "shutting_down",
                "the server is shutting down; reconnect",
            )
        limit = state.settings.max_sessions
        if len(state.sessions) + state.admitting >= limit:
            return cls(
                status.WS_1013_TRY_AGAIN_LATER,
                429,
                "too_many_sessions",
                f"the server is full ({limit} sessions, R1VOICE_MAX_SESSIONS); retry later",
            )
        return None
