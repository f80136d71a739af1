"""The OpenAI Realtime WebSocket at /v1/realtime."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect, status

from app.protocol.dialect import BETA, GA
from app.realtime.session import Session
from app.server.state import WsState

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
    return next((p for p in offered if p.startswith(KNOWN_SUBPROTOCOL_PREFIXES)), None)


def _dialect(websocket: WebSocket) -> str | None:
    """The dialect the handshake asks for, or None to follow the client's events."""
    asked = websocket.query_params.get("dialect")
    if asked in (BETA, GA):
        return asked
    beta_header = "realtime=v1" in websocket.headers.get("openai-beta", "")
    if beta_header or "openai-beta.realtime-v1" in websocket.scope.get("subprotocols", []):
        return BETA
    return None


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket, state: WsState) -> None:
    if not state.ready or state.components is None:
        await websocket.close(
            code=status.WS_1013_TRY_AGAIN_LATER, reason="server is warming up; retry shortly"
        )
        return
    await websocket.accept(subprotocol=_choose_subprotocol(websocket.scope.get("subprotocols", [])))
    components = state.metrics.metered(state.components)  # LLM series for /metrics
    session = Session(components, _dialect(websocket), state.metrics.record_response)
    state.sessions[session.id] = session

    async def send_events() -> None:
        while (event := await session.outbox.get()) is not None:
            await websocket.send_json(event)

    sender = asyncio.create_task(send_events())
    try:
        await session.start()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text")
            if raw is None:
                raw = message.get("bytes") or b""
            await session.handle(raw)
            if sender.done():  # the client is gone (send failed)
                break
    except WebSocketDisconnect:
        pass
    finally:
        state.sessions.pop(session.id, None)
        await session.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sender, timeout=5)
        sender.cancel()
