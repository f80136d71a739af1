"""One Realtime session's life over one transport, from its first event to its close.

Both transports (the WebSocket route, a WebRTC call) run their sessions here, so what a
session's life means is said once: messages are read as they come and handled in order
(inbox.py); the session's events go out through one sender; the session ends when the
peer leaves, a send fails, the peer stops reading (its events overflow the outbox, or
one send waits too long), the server drains (the session is idle, or the drain timed
out), or it expires (idle, or too old). Then its answer is cancelled, its last events go
out, and the transport is closed with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from fastapi import status

from app.protocol.server_events import Error
from app.realtime.responses.playback import Playback
from app.realtime.session import Session
from app.server.drain import Drain
from app.server.routes.inbox import Inbox
from app.server.routes.send_stall import SendStall
from app.server.state import ServerState
from app.server.transport import InputPcm, Received, Transport

log = logging.getLogger("r1voice.realtime")


def create_session(
    state: ServerState,
    dialect: str | None,
    extensions: bool,
    playback: Playback | None = None,
    trace_parent: Any = None,
) -> Session:
    """A session on the server's models (checked ready by the caller's Refusal);
    `trace_parent`: the trace context its trace joins (a handshake's traceparent)."""
    assert state.components is not None
    metrics = state.metrics
    return Session(
        components=metrics.metered(state.components),  # LLM series for /metrics
        dialect=dialect,
        on_response=metrics.record_response,
        extensions=extensions,
        on_merge=metrics.record_merge,
        meter_llm=metrics.metered_llm,
        playback=playback,
        trace=state.telemetry.session(trace_parent),
    )


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


class SessionRunner:
    def __init__(
        self, state: ServerState, session: Session, transport: Transport, kind: str = "realtime"
    ) -> None:
        """`kind`: the transport's name in /metrics' session count."""
        self._state = state
        self._kind = kind
        self._session = session
        self._transport = transport

    async def _handle(self, data: Received, arrived_at: float) -> None:
        session, limit = self._session, self._state.settings.max_message_bytes
        if isinstance(data, InputPcm):
            await session.append_pcm(data.pcm, arrived_at)
        elif len(data) > limit:
            session.refuse_oversized(len(data), limit)
        else:
            await session.handle(data, arrived_at)

    async def run(self) -> None:
        """Run the session until it ends (see the module's docstring), then close it."""
        state, session, transport = self._state, self._session, self._transport
        state.sessions[session.id] = session
        state.metrics.record_session(self._kind)
        stall = SendStall(state.settings.send_stall_s)

        async def send_events() -> None:
            while (text := await session.outbox.get_text()) is not None:
                stall.sending()
                await transport.send(text)
                stall.sent()

        inbox = Inbox(transport.receive, self._handle)
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
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if expired.done():
                code, message = expired.result()
                session.outbox.emit(Error(code=code, message=message))
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
                await transport.close(1008, "the client is not reading events; closing")
            # The last events go out first. Waited on, not awaited: a sender cancelled just
            # above would raise CancelledError here (the route then failed with a traceback).
            await asyncio.wait([sender], timeout=5)
            if drained.done():
                await transport.close(status.WS_1001_GOING_AWAY, "the server is shutting down")
            elif expired.done() and not expired.cancelled():
                await transport.close(status.WS_1000_NORMAL_CLOSURE, expired.result()[0])
            for task in tasks:
                task.cancel()
            await asyncio.wait({*tasks, reader})
            session.outbox.discard()
            for task in (sender, reader, receiver):  # a failed send or receive: the peer is gone
                if not task.cancelled() and task.exception() is not None:
                    log.debug("connection closed: %r", task.exception(), exc_info=task.exception())
            state.heap.session_closed()
