"""GPT-Live's WebSocket at /v1/live/sessions: `session.start` first, then audio in and out
(app/live/ says how it drives the realtime session)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket, status

from app.live.runner import LiveRunner, create_live_session
from app.server.refusal import Refusal
from app.server.routes.realtime import WebSocketTransport
from app.server.state import WsState

router = APIRouter(tags=["live"])


@router.websocket("/v1/live/sessions")
async def live_sessions(websocket: WebSocket, state: WsState) -> None:
    refusal = Refusal.of(state)
    transport = WebSocketTransport(websocket)
    if refusal is not None:  # accepted, then closed: the client gets the code and reason
        await websocket.accept()
        await transport.close(refusal.ws_code, refusal.message)
        return
    state.admitting += 1  # counted before the first await: no race past max_sessions
    try:
        await websocket.accept()
    finally:
        state.admitting -= 1
    runner = LiveRunner(state, create_live_session(state), transport)
    await runner.run()
    if not runner.transport.lost:
        await transport.close(status.WS_1000_NORMAL_CLOSURE, "session closed")
