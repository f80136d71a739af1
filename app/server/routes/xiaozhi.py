"""xiaozhi ESP32 devices: the OTA check-in at /xiaozhi/ota/ and the WebSocket at
/xiaozhi/v1/ (78/xiaozhi-esp32 docs/websocket.md). The device drives the same Realtime
session as /v1/realtime, through the adapter in app/xiaozhi/device.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import JSONResponse

from app.protocol.dialect import BETA
from app.server.refusal import Refusal
from app.server.session_runner import SessionRunner, create_session
from app.server.state import HttpState, ServerState, WsState
from app.xiaozhi.board_hold import BoardHold
from app.xiaozhi.device import DeviceOptions, DeviceTransport
from app.xiaozhi.hello import DeviceHello, HelloError, server_hello
from app.xiaozhi.tokens import DeviceAccess

log = logging.getLogger("r1voice.xiaozhi")
router = APIRouter(tags=["xiaozhi"])
HELLO_TIMEOUT_S = 10.0  # the firmware's own wait for our hello
WS_PATH = "/xiaozhi/v1/"


def _access(state: ServerState) -> DeviceAccess:
    return DeviceAccess(state.settings.api_key, state.settings.xiaozhi_devices)


def _ws_url(request: Request, public_url: str) -> str:
    base = public_url.rstrip("/") if public_url else f"{request.url.scheme}://{request.url.netloc}"
    return base.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + WS_PATH


@router.post("/xiaozhi/ota/")
async def ota(request: Request, state: HttpState) -> JSONResponse:
    """A device checks in (at boot): the server's time and where its WebSocket is."""
    device_id = request.headers.get("device-id", "")
    refusal = _access(state).refusal(device_id)
    if refusal is not None:
        state.metrics.record_transport_error("xiaozhi", "device_refused")
        return JSONResponse({"error": refusal}, status_code=403)
    with contextlib.suppress(ValueError):
        info = json.loads(await request.body() or b"{}")
        version = (info.get("application") or {}).get("version", "?")
        log.info("xiaozhi device %s checked in (firmware %s)", device_id, version)
    return JSONResponse(
        {
            "server_time": {"timestamp": int(time.time() * 1000), "timezone_offset": 0},
            "websocket": {
                "url": _ws_url(request, state.settings.public_url),
                "token": _access(state).issue(device_id),
            },
        }
    )


def _header(websocket: WebSocket, name: str) -> str:
    """A handshake header, or the query parameter browsers' test pages send instead."""
    value = websocket.headers.get(name) or websocket.query_params.get(name.lower()) or ""
    if not value and name == "Authorization":
        value = websocket.query_params.get("access_token", "")
    return value.strip()


async def _hello(websocket: WebSocket, header_version: int) -> DeviceHello:
    try:
        message = await asyncio.wait_for(websocket.receive(), HELLO_TIMEOUT_S)
    except TimeoutError:
        raise HelloError(f"no hello within {HELLO_TIMEOUT_S:g} s of connecting") from None
    if message["type"] == "websocket.disconnect":
        raise HelloError("the device left before its hello")
    if message.get("text") is None:
        raise HelloError("a binary frame came before the hello; send the hello first")
    try:
        parsed = json.loads(message["text"])
    except ValueError:
        raise HelloError("the hello is not JSON") from None
    return DeviceHello.parse(parsed, header_version)


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(websocket.close(code=code, reason=reason[:120]), timeout=2)


@router.websocket(WS_PATH)
async def device(websocket: WebSocket, state: WsState) -> None:
    metrics, settings = state.metrics, state.settings
    device_id = _header(websocket, "Device-Id")
    token = _header(websocket, "Authorization").removeprefix("Bearer ").strip()
    access = _access(state)
    denied = access.refusal(device_id) or access.token_refusal(device_id, token)
    refusal = Refusal.of(state)
    await websocket.accept()
    if denied is not None:
        metrics.record_transport_error("xiaozhi", "unauthorized")
        await _close(websocket, 1008, denied)
        return
    if refusal is not None:
        await _close(websocket, refusal.ws_code, refusal.message)
        return
    raw_version = _header(websocket, "Protocol-Version") or "1"
    try:
        hello = await _hello(websocket, int(raw_version) if raw_version.isdigit() else 0)
    except HelloError as exc:
        metrics.record_transport_error("xiaozhi", "bad_hello")
        await _close(websocket, 1008, str(exc))
        return
    session = create_session(state, BETA, extensions=False)
    options = DeviceOptions(
        llm_model=settings.xiaozhi_llm_model,
        asr_model=settings.xiaozhi_asr_model,
        voice=settings.xiaozhi_voice,
        turn_detection=settings.turn_detection,
        mcp_timeout_s=settings.mcp_timeout_s,
    )
    transport = DeviceTransport(
        websocket,
        hello,
        session.id,
        options,
        on_error=lambda code: metrics.record_transport_error("xiaozhi", code),
    )
    # the board stops at the first sound over an answer, not at speech_started
    turns = session.turns
    turns.barge_in.silence_with(
        BoardHold(
            transport.replies,
            realtime=lambda: transport.mode == "realtime",
            confirmed=turns.speech_counts,
        )
    )
    await websocket.send_text(json.dumps(server_hello(session.id)))
    log.info("xiaozhi device %s: session %s (protocol v%d)", device_id, session.id, hello.version)
    transport.start()
    await SessionRunner(state, session, transport, kind="xiaozhi").run()
    await transport.close(1000, "session ended")
