"""One WebRTC peer (a "call" in OpenAI's API): a peer connection, and the session's
transport over it.

Events travel on the `oai-events` data channel the client opens (text, as the WebSocket
carries them); the microphone comes in on the audio track (input_reader.py) and answers
go out on ours (output_track.py). The peer ends when the data channel or the peer
connection closes or fails, when ICE/DTLS has not connected within the connect timeout,
or when the session ends; `shutdown` then frees all of it (peer connection, tracks,
tasks). aiortc runs ICE, DTLS, SCTP and SRTP on the event loop, and the Opus codec on
threads (see the two track modules).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCDataChannel,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)

from app.server.transport import InputPcm, Received
from app.server.webrtc.input_reader import InputReader, no_playout_delay
from app.server.webrtc.offer import Offer, OfferError
from app.server.webrtc.output_track import OutputTrack

log = logging.getLogger("r1voice.webrtc")

EVENTS_CHANNEL = "oai-events"
# Messages read off the peer and not yet taken by the session's inbox: the inbox has its
# own bound and reads as they come, so this fills only when the server cannot keep up.
MAX_INBOUND = 1024
# The data channel's send buffer: past HIGH the sender waits until it is below LOW (the
# WebSocket's sends wait the same way on a full socket; the send-stall check sees it).
SEND_BUFFER_HIGH = 1024 * 1024
SEND_BUFFER_LOW = 256 * 1024


class Peer:
    """A `Transport` (app/server/transport.py) over one RTCPeerConnection."""

    def __init__(self, peer_id: str, ice_servers: list[dict[str, Any]]) -> None:
        self.id = peer_id
        servers = [RTCIceServer(**server) for server in ice_servers]
        # an empty list, not None: aiortc's default adds Google's STUN server
        self._pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))
        self.track = OutputTrack()  # the session's Playback
        self._inbound: asyncio.Queue[Received | None] = asyncio.Queue()
        self._channel: RTCDataChannel | None = None
        self._channel_open = asyncio.Event()
        self._send_room = asyncio.Event()
        self._send_room.set()
        self._connected = asyncio.Event()
        self._ended = asyncio.Event()
        self._end_reason = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._pc.on("datachannel", self._on_datachannel)
        self._pc.on("track", self._on_track)
        self._pc.on("connectionstatechange", self._on_connection_state)

    # -- negotiation ------------------------------------------------------------------

    async def answer(self, offer: Offer) -> str:
        """The SDP answer to `offer` (host candidates gathered, or the configured
        servers'); raises OfferError when aiortc cannot answer it."""
        pc = self._pc
        try:
            await pc.setRemoteDescription(RTCSessionDescription(offer.sdp, "offer"))
        except Exception as exc:  # aiortc's parser: ValueError, KeyError, ...
            raise OfferError(
                "invalid_offer",
                f"the SDP offer could not be read ({type(exc).__name__}: {exc}); send the "
                "offer exactly as RTCPeerConnection.createOffer() made it",
            ) from None
        for transceiver in pc.getTransceivers():
            if transceiver.kind == "audio" and not no_playout_delay(transceiver.receiver):
                log.warning("call %s: aiortc's jitter buffer not found; it holds 80 ms", self.id)
        pc.addTrack(self.track)  # on the offer's audio transceiver
        try:
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:
            raise OfferError(
                "invalid_offer",
                f"the offer could not be answered ({type(exc).__name__}: {exc})",
            ) from None
        return pc.localDescription.sdp

    def preface(self, text: str) -> None:
        """An event the session handles before any of the client's (the form's session)."""
        self._inbound.put_nowait(text)

    async def hang_up(self) -> None:
        """`POST .../hangup`: the session ends as if the client had left."""
        self._end("hung up")

    def watch_connect(self, timeout_s: float) -> None:
        """End the peer if ICE/DTLS has not connected within `timeout_s`."""
        self._spawn(self._connect_watchdog(timeout_s))

    async def _connect_watchdog(self, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(self._connected.wait(), timeout_s)
        except TimeoutError:
            self._end(f"ICE/DTLS did not connect within {timeout_s:g} s")

    # -- aiortc's events ----------------------------------------------------------------

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        if channel.label != EVENTS_CHANNEL or self._channel is not None:
            log.info("call %s: data channel %r ignored", self.id, channel.label)
            return
        self._channel = channel
        channel.bufferedAmountLowThreshold = SEND_BUFFER_LOW
        channel.on("message", self._on_message)
        channel.on("bufferedamountlow", self._send_room.set)
        channel.on("close", lambda: self._end("the data channel closed"))
        if channel.readyState == "open":
            self._channel_open.set()
        else:
            channel.on("open", self._channel_open.set)

    def _on_message(self, message: str | bytes) -> None:
        if self._inbound.qsize() >= MAX_INBOUND:
            self._end("the client sends events faster than the server can take them")
            return
        self._inbound.put_nowait(message)

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind == "audio":
            self._spawn(InputReader(track, self._put_audio).run())

    async def _put_audio(self, pcm: InputPcm) -> None:
        if self._inbound.qsize() < MAX_INBOUND:  # else dropped: the server is behind
            self._inbound.put_nowait(pcm)

    def _on_connection_state(self) -> None:
        state = self._pc.connectionState
        if state == "connected":
            self._connected.set()
        elif state in ("failed", "closed"):
            self._end(f"the peer connection {state}")

    # -- Transport ----------------------------------------------------------------------

    async def receive(self) -> Received | None:
        message = await self._inbound.get()
        if message is None:
            self._inbound.put_nowait(None)  # every later call sees the end too
        return message

    async def send(self, text: str) -> None:
        await self._until(self._channel_open)
        channel = self._channel
        if channel is None or channel.readyState != "open":
            raise ConnectionError("the data channel is closed")
        channel.send(text)
        if channel.bufferedAmount > SEND_BUFFER_HIGH:
            self._send_room.clear()
            await self._until(self._send_room)

    async def close(self, code: int, reason: str) -> None:
        """The session ends the peer (the code has no place on WebRTC: the reason is logged)."""
        self._end(reason)
        await self.shutdown()

    # -- lifetime -----------------------------------------------------------------------

    async def _until(self, event: asyncio.Event) -> None:
        """Wait for `event`; ConnectionError if the peer ends first."""
        if not event.is_set():
            waiter = asyncio.ensure_future(event.wait())
            ender = asyncio.ensure_future(self._ended.wait())
            try:
                await asyncio.wait({waiter, ender}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                ender.cancel()
        if not event.is_set():
            raise ConnectionError(f"the call ended: {self._end_reason}")

    def _end(self, reason: str) -> None:
        if self._ended.is_set():
            return
        self._end_reason = reason
        log.info("call %s ends: %s", self.id, reason)
        self._ended.set()
        self._inbound.put_nowait(None)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def shutdown(self) -> None:
        """Close the peer connection and stop every task of the peer (idempotent)."""
        self._end("closed")
        self.track.stop()
        with contextlib.suppress(Exception):
            await self._pc.close()
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        while not self._inbound.empty():  # what was never handled (audio, events)
            self._inbound.get_nowait()
