"""The OpenAI Realtime WebSocket at /v1/realtime."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket

from app.protocol.dialect import BETA, GA
from app.server.refusal import Refusal
from app.server.session_runner import SessionRunner, create_session
from app.server.state import WsState
from app.server.transport import Received
from app.telemetry.http import incoming_context

log = logging.getLogger("r1voice.realtime")
router = APIRouter(tags=["realtime"])

# Browsers cannot set headers on a WebSocket, so Realtime clients pass them as
# subprotocols: `realtime`, `openai-insecure-api-key.<key>`, `openai-beta.realtime-v1`.
# We answer with `realtime` when offered (the server must pick one of the offered).
KNOWN_SUBPROTOCOL_PREFIXES = (
    "realtime",
    "openai-insecure-api-key.",
    "openai-beta.",
    "openai-organization.",
)


def _choose_subprotocol(offered: list[str]) -> str | None:
    if "realtime" in offered:
        return "realtime"
    known = (p for p in offered if p.startswith(KNOWN_SUBPROTOCOL_PREFIXES))
    # never echo a key (openai-insecure-api-key.<key>) back in the handshake's response
    return next((p for p in known if not p.startswith("openai-insecure-api-key.")), None)


def _dialect(websocket: WebSocket) -> str | None:
    """The dialect the handshake asks for, or None to follow the client's events."""
    asked = websocket.query_params.get("dialect")
    if asked in (BETA, GA):
        return asked
    beta_header = "realtime=v1" in websocket.headers.get("openai-beta", "")
    if beta_header or "openai-beta.realtime-v1" in websocket.scope.get("subprotocols", []):
        return BETA
    return None


class WebSocketTransport:
    """A Realtime session's transport over the WebSocket (see app/server/transport.py)."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket

    async def receive(self) -> Received | None:
        message = await self._websocket.receive()
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def send(self, text: str) -> None:
        await self._websocket.send_text(text)

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._websocket.close(code=code, reason=reason), timeout=2)


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket, state: WsState) -> None:
    refusal = Refusal.of(state)
    subprotocol = _choose_subprotocol(websocket.scope.get("subprotocols", []))
    transport = WebSocketTransport(websocket)
    if refusal is not None:  # accepted, then closed: the client gets the code and reason
        await websocket.accept(subprotocol=subprotocol)
        await transport.close(refusal.ws_code, refusal.message)
        return
    state.admitting += 1  # counted before the first await: no race past max_sessions
    try:
        await websocket.accept(subprotocol=subprotocol)
    finally:
        state.admitting -= 1
    # ?r1voice_events=1: also our r1voice.* events (turn metrics, reasoning); off by default
    extensions = websocket.query_params.get("r1voice_events", "") in ("1", "true")
    joins = incoming_context(websocket.scope["headers"])  # a caller's traceparent, if any
    session = create_session(state, _dialect(websocket), extensions, trace_parent=joins)
    await SessionRunner(state, session, transport).run()
