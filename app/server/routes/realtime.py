"""The OpenAI Realtime WebSocket at /v1/realtime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from fastapi import APIRouter, WebSocket, status

from app.protocol import events
from app.protocol.dialect import BETA, GA
from app.realtime.session import Session
from app.server.drain import Drain
from app.server.routes.inbox import Inbox
from app.server.routes.send_stall import SendStall
from app.server.state import ServerState, WsState

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


async def _drained(session: Session, drain: Drain) -> None:
    """Returns once the server drains and this session is idle (or the drain timed out)."""
    await drain.started.wait()
    # Polled: `idle` is computed from the answer, the turn and their tasks; no event says it.
    while not (session.idle or drain.deadline.is_set()):  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def _expired(session: Session, idle_s: float, max_s: float) -> tuple[str, str]:
    """Returns (code, message) once the session has been idle for `idle_s` (no client
    event and no answer running) or open for `max_s`."""
    while True:
        await asyncio.sleep(min(1.0, idle_s, max_s))
        now = time.monotonic()
        if now - session.started_at >= max_s:
            return "session_expired", (
                f"the session reached its maximum duration of {max_s:g} s "
                "(R1VOICE_SESSION_MAX_S); open a new one"
            )
        if session.idle and now - session.last_event_at >= idle_s:
            return "session_idle_timeout", (
                f"no client event for {idle_s:g} s (R1VOICE_SESSION_IDLE_TIMEOUT_S); "
                "the session is closed"
            )


def _refusal(state: ServerState) -> tuple[int, str] | None:
    """Why a new session cannot start now (close code, reason), or None."""
    if not state.ready or state.components is None:
        return status.WS_1013_TRY_AGAIN_LATER, "server is warming up; retry shortly"
    if state.drain.draining:
        return status.WS_1001_GOING_AWAY, "the server is shutting down; reconnect"
    limit = state.settings.max_sessions
    if len(state.sessions) + state.admitting >= limit:
        return status.WS_1013_TRY_AGAIN_LATER, (
            f"the server is full ({limit} sessions, R1VOICE_MAX_SESSIONS); retry later"
        )
    return None


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(websocket.close(code=code, reason=reason), timeout=2)


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket, state: WsState) -> None:
    refusal = _refusal(state)
    subprotocol = _choose_subprotocol(websocket.scope.get("subprotocols", []))
    if refusal is not None:  # accepted, then closed: the client gets the code and reason
        await websocket.accept(subprotocol=subprotocol)
        await _close(websocket, *refusal)
        return
    state.admitting += 1  # counted before the first await: no race past max_sessions
    try:
        await websocket.accept(subprotocol=subprotocol)
    finally:
        state.admitting -= 1
    assert state.components is not None  # checked by _refusal
    components = state.metrics.metered(state.components)  # LLM series for /metrics
    # ?r1voice_events=1: also our r1voice.* events (turn metrics, reasoning); off by default
    extensions = websocket.query_params.get("r1voice_events", "") in ("1", "true")
    metrics = state.metrics
    session = Session(
        components=components,
        dialect=_dialect(websocket),
        on_response=metrics.record_response,
        extensions=extensions,
        on_merge=metrics.record_merge,
        meter_llm=metrics.metered_llm,
    )
    state.sessions[session.id] = session

    stall = SendStall(state.settings.send_stall_s)

    async def send_events() -> None:
        while (text := await session.outbox.get_text()) is not None:
            stall.sending()
            await websocket.send_text(text)
            stall.sent()

    async def handle(data: str | bytes, arrived_at: float) -> None:
        if len(data) > state.settings.max_message_bytes:
            session.refuse_oversized(len(data), state.settings.max_message_bytes)
        else:
            await session.handle(data, arrived_at)

    inbox = Inbox(websocket.receive, handle)
    sender = asyncio.create_task(send_events())
    reader = asyncio.create_task(inbox.read())
    receiver = asyncio.create_task(inbox.handle())
    overflow = asyncio.create_task(session.outbox.overflowed.wait())
    stalled = asyncio.create_task(stall.wait())
    drained = asyncio.create_task(_drained(session, state.drain))
    settings = state.settings
    expired = asyncio.create_task(
        _expired(session, settings.session_idle_timeout_s, settings.session_max_s)
    )
    tasks = {sender, receiver, overflow, stalled, drained, expired}
    try:
        await session.start()
        # Ends when the client leaves, a send fails, the client stopped reading (its
        # events overflow the outbox, or one send waits too long), the server drains (the session is idle, or the drain timed out), or it expires.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if expired.done():
            session.outbox.emit(events.error(*expired.result()))
    finally:
        state.sessions.pop(session.id, None)
        reader.cancel()
        receiver.cancel()
        # Why its answer, if one still runs, is cancelled: the client left (or stopped
        # reading), or the server ends the session.
        reason = "client_cancelled"
        if drained.done():
            reason = "server_shutdown"
        elif expired.done():
            reason = "session_expired"
        await session.close(reason)
        if overflow.done() or stalled.done():  # never wait on a peer that does not read
            sender.cancel()
            log.info("session %s: the client is not reading its events; closed", session.id)
            await _close(websocket, 1008, "the client is not reading events; closing")
        # The last events go out first. Waited on, not awaited: a sender cancelled just
        # above would raise CancelledError here (the route then failed with a traceback).
        await asyncio.wait([sender], timeout=5)
        if drained.done():
            await _close(websocket, status.WS_1001_GOING_AWAY, "the server is shutting down")
        elif expired.done() and not expired.cancelled():
            await _close(websocket, status.WS_1000_NORMAL_CLOSURE, expired.result()[0])
        for task in tasks:
            task.cancel()
        await asyncio.wait({*tasks, reader})
        session.outbox.discard()
        for task in (sender, reader, receiver):  # a failed send or receive: the peer is gone
            if not task.cancelled() and task.exception() is not None:
                log.debug("websocket closed: %r", task.exception(), exc_info=task.exception())
        state.heap.session_closed()
