"""The OpenAI Realtime WebSocket at /v1/realtime."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect, status

from app.session import Session
from app.state import WsState

log = logging.getLogger("r1voice.realtime")
router = APIRouter(tags=["realtime"])

# Subprotocols browsers use to pass what other clients put in headers; `realtime` first.
KNOWN_SUBPROTOCOL_PREFIXES = (
    "realtime",
    "openai-insecure-api-key.",
    "openai-beta.",
    "openai-organization.",
)


def _choose_subprotocol(offered: list[str]) -> str | None:
    for proto in offered:
        if proto == "realtime":
            return proto
    return None


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket, state: WsState) -> None:
    if not state.ready or state.components is None:
        await websocket.close(
            code=status.WS_1013_TRY_AGAIN_LATER, reason="server is warming up; retry shortly"
        )
        return
    await websocket.accept(subprotocol=_choose_subprotocol(websocket.scope.get("subprotocols", [])))
    session = Session(state.components)
    state.active_sessions += 1

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
        state.active_sessions -= 1
        await session.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sender, timeout=5)
        sender.cancel()
