"""A Live session's life over one connection: the realtime session runner's (its ends,
drain, expiry, a client that stops reading), with Live's messages handled by the
LiveSession and `session.close` ending it after `session.closed` went out."""

from __future__ import annotations

import asyncio
import json

from app.live.config import PcmFormat
from app.live.live_session import LiveSession
from app.live.outbox import LiveOutbox
from app.live.sideband import RUNNING
from app.live.timeline import Timeline
from app.realtime.responses.playback import Playback
from app.realtime.session import Session
from app.server.session_runner import SessionRunner
from app.server.state import ServerState
from app.server.transport import InputPcm, Received, Transport

CLOSE = "session.close"


def create_live_session(state: ServerState, playback: Playback | None = None) -> LiveSession:
    """A Live session on the server's models (checked ready by the caller's Refusal);
    `playback`: a WebRTC peer's audio track, which plays the answers."""
    assert state.components is not None
    metrics = state.metrics
    outbox = LiveOutbox(Timeline(), PcmFormat(type="audio/pcm", rate=24000))
    session = Session(
        components=metrics.metered(state.components),
        dialect="ga",  # the realtime session's own events are GA-shaped; the outbox translates
        on_response=metrics.record_response,
        on_merge=metrics.record_merge,
        meter_llm=metrics.metered_llm,
        playback=playback,
        outbox=outbox,
        trace=state.telemetry.session(),
    )
    voices = state.components.tts.voices()
    llms = state.components.llms
    settings = state.settings
    return LiveSession(
        session, outbox, voices, settings.session_max_s, llms, settings.live_delegate
    )


class ClosingTransport:
    """The connection, read until the client's `session.close` (nothing after it is)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._closing = False
        self.lost = False  # the client went away without session.close

    async def receive(self) -> Received | None:
        if self._closing:
            return None
        data = await self._transport.receive()
        if data is None:
            self.lost = True
        elif not isinstance(data, InputPcm) and _is_close(data):
            self._closing = True
        return data

    async def send(self, text: str) -> None:
        await self._transport.send(text)

    async def close(self, code: int, reason: str) -> None:
        await self._transport.close(code, reason)


def _is_close(data: str | bytes) -> bool:
    marker = CLOSE.encode() if isinstance(data, bytes) else CLOSE
    if marker not in data:  # type: ignore[operator]
        return False
    try:
        parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("type") == CLOSE


class LiveRunner(SessionRunner):
    def __init__(
        self, state: ServerState, live: LiveSession, transport: Transport, kind: str = "live"
    ) -> None:
        self.transport = ClosingTransport(transport)
        super().__init__(state, live.session, self.transport, kind)
        self._live = live

    async def _end_when_closed(self) -> None:
        """A `session.closed` the client did not ask for (a sideband's close, expiry): the
        connection ends once it went out (the client's own ends its reading at once)."""
        outbox = self._live.outbox
        await outbox.ended.wait()
        for _ in range(100):  # polled: the outbox says nothing when it drains; at most 5 s
            if outbox.queued_bytes == 0:
                break
            await asyncio.sleep(0.05)
        await self.transport.close(1000, "session closed")

    async def _handle(self, data: Received, arrived_at: float) -> None:
        limit = self._state.settings.max_message_bytes
        if isinstance(data, InputPcm):
            await self._live.session.append_pcm(data.pcm, arrived_at)
        elif len(data) > limit:
            self._live.session.refuse_oversized(len(data), limit)
        else:
            await self._live.handle(data, arrived_at)

    async def run(self) -> None:
        RUNNING[self._live.session.id] = self._live
        ender = asyncio.create_task(self._end_when_closed())
        try:
            await super().run()
        finally:
            RUNNING.pop(self._live.session.id, None)
            ender.cancel()
        self._live.delegator.close()
        if self.transport.lost and self._live.config is not None:
            self._live.outbox.closing("connection_lost")  # for the log: no one hears it
