"""GPT-Live at /v1/live/sessions: the WebSocket (`session.start` first, then audio in and
out) and `POST` with an SDP offer, a WebRTC session whose data channel carries the Live
events (the realtime WebRTC path: webrtc/peer.py). app/live/ says how a Live session
drives the realtime session."""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, WebSocket, status

from app.live.live_session import LiveSession
from app.live.runner import LiveRunner, create_live_session
from app.live.sideband import RUNNING, Sideband
from app.protocol import events
from app.protocol.errors import ProtocolError
from app.server.refusal import Refusal
from app.server.routes.openai_common import OpenAIError
from app.server.routes.realtime import WebSocketTransport, _choose_subprotocol
from app.server.state import HttpState, ServerState, WsState
from app.server.tenants import by_key, tenant_of
from app.server.transport import InputPcm
from app.server.webrtc.offer import Offer, OfferError

if TYPE_CHECKING:  # aiortc is imported where a call first needs it
    from app.server.webrtc.peer import Peer

log = logging.getLogger("r1voice.live")
router = APIRouter(tags=["live"])
PATH = "/v1/live/sessions"


@router.websocket(PATH)
async def live_sessions(websocket: WebSocket, state: WsState) -> None:
    refusal = Refusal.of(state)
    # a browser offers subprotocols (a client secret) and fails a handshake echoing none
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
    live = create_live_session(state)
    live.tenant = tenant_of(websocket.scope)  # its creator's: a sideband must be of it
    runner = LiveRunner(state, live, transport)
    await runner.run()
    if not runner.transport.lost:
        await transport.close(status.WS_1000_NORMAL_CLOSURE, "session closed")


@router.websocket(PATH + "/{session_id}/attach")
async def attach(websocket: WebSocket, session_id: str, state: WsState) -> None:
    await websocket.accept()
    transport = WebSocketTransport(websocket)
    keyed = bool(state.settings.api_key or state.settings.api_keys.strip())
    if keyed and not by_key(websocket.scope):  # a client secret opens the primary only
        reason = "a sideband needs the API key (Authorization: Bearer <key>), not a client secret"
        await transport.close(status.WS_1008_POLICY_VIOLATION, reason)
        return
    live = RUNNING.get(session_id)
    if live is None:
        reason = f"no running Live session {session_id!r}"
        await transport.close(status.WS_1008_POLICY_VIOLATION, reason)
        return
    if keyed and live.tenant != tenant_of(websocket.scope):
        reason = "another tenant's session: attach with an API key of the tenant that created it"
        await transport.close(status.WS_1008_POLICY_VIOLATION, reason)
        return
    with Sideband(live) as sideband:

        async def read() -> None:
            while (data := await transport.receive()) is not None:
                if not isinstance(data, InputPcm):
                    await sideband.handle(data, time.monotonic())

        tasks = {asyncio.create_task(sideband.pump(transport.send)), asyncio.create_task(read())}
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
    await transport.close(status.WS_1000_NORMAL_CLOSURE, "detached, or the session ended")


def _request(body: Any) -> tuple[dict[str, Any], Offer]:
    """The session config and the offer of a `POST /v1/live/sessions` body."""
    if not isinstance(body, dict) or set(body) - {"session", "transport"}:
        extra = sorted(set(body) - {"session", "transport"}) if isinstance(body, dict) else []
        raise OpenAIError(
            400,
            f"unknown parameter {extra[0]!r}"
            if extra
            else "the body is a JSON object with `session` and `transport`",
            code="unknown_parameter" if extra else "invalid_request",
            param=extra[0] if extra else None,
        )
    session, transport = body.get("session"), body.get("transport")
    if not isinstance(session, dict):
        raise OpenAIError(
            400,
            "`session` (an object) is required",
            code="missing_required_parameter",
            param="session",
        )
    if isinstance(session.get("audio"), dict) and "format" in session["audio"]:
        raise OpenAIError(
            400,
            "WebRTC negotiates its audio format: leave session.audio.format out",
            code="unknown_parameter",
            param="session.audio.format",
        )
    if not isinstance(transport, dict) or transport.get("type") != "webrtc":
        raise OpenAIError(
            400,
            'transport must be {"type": "webrtc", "sdp": <the SDP offer>}',
            code="invalid_value",
            param="transport",
        )
    try:
        return session, Offer.parse(str(transport.get("sdp") or ""))
    except OfferError as exc:
        raise OpenAIError(400, exc.message, code=exc.code, param="transport.sdp") from None


async def _run(state: ServerState, live: LiveSession, peer: Peer) -> None:
    state.admitting -= 1  # the session counts from here on (in state.sessions)
    try:
        await LiveRunner(state, live, peer, "live_webrtc").run()
    finally:
        await peer.shutdown()


@router.post(PATH, status_code=201)
async def create_webrtc_session(request: Request, state: HttpState) -> dict[str, Any]:
    # aiortc: imported at the first call, on a thread (never on the loop other sessions use)
    Peer = (await asyncio.to_thread(importlib.import_module, "app.server.webrtc.peer")).Peer
    try:
        body = await request.json()
    except ValueError:
        raise OpenAIError(400, "the body is not JSON", code="invalid_json") from None
    session_config, offer = _request(body)
    refusal = Refusal.of(state)
    if refusal is not None:
        raise OpenAIError(
            refusal.http_status, refusal.message, code=refusal.code, headers={"Retry-After": "1"}
        )
    state.admitting += 1  # counted before the first await: no race past max_sessions
    peer = Peer(events.new_id("rtc"), state.settings.ice_server_list())
    started = False
    try:
        answer = await peer.answer(offer)
        live = create_live_session(state, playback=peer.track)
        live.tenant = tenant_of(request.scope)
        await live.start_with(session_config)  # session.started waits on the data channel
        peer.watch_connect(state.settings.webrtc_connect_timeout_s)
        client = request.client.host if request.client else "unknown"
        state.peers.start(peer.id, _run(state, live, peer), peer.hang_up, client)
        started = True
    except OfferError as exc:
        raise OpenAIError(400, exc.message, code=exc.code, param="transport.sdp") from None
    except ProtocolError as exc:
        raise OpenAIError(400, exc.message, code=exc.code, param=exc.param) from None
    finally:
        if not started:
            state.admitting -= 1
            await peer.shutdown()
    return {"session": {"id": live.session.id}, "transport": {"type": "webrtc", "sdp": answer}}
