"""A real WebRTC client for the tests, on aiortc, as a browser would use the server:
a microphone track (a recording, then silence), the `oai-events` data channel, the
answer's audio off the remote track."""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

MIC_RATE = 48_000
FRAME = MIC_RATE // 50  # 20 ms
AUDIBLE_RMS = 100  # PCM16 units: above Opus's noise floor on silence


class Microphone(MediaStreamTrack):
    """20 ms frames at real time: what `say` queued, then silence."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._pending = np.zeros(0, dtype=np.int16)
        self._start: float | None = None
        self._frames = 0

    def say(self, samples: np.ndarray) -> None:
        """Queue float32 mono samples at 48 kHz."""
        pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16)
        self._pending = np.concatenate([self._pending, pcm])

    @property
    def speaking(self) -> bool:
        return self._pending.size > 0

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.monotonic()
        else:
            due = self._start + self._frames * 0.02
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        chunk, self._pending = self._pending[:FRAME], self._pending[FRAME:]
        chunk = np.pad(chunk, (0, FRAME - chunk.size))
        frame = AudioFrame(format="s16", layout="mono", samples=FRAME)
        frame.planes[0].update(chunk.tobytes())
        frame.pts, frame.sample_rate = self._frames * FRAME, MIC_RATE
        frame.time_base = fractions.Fraction(1, MIC_RATE)
        self._frames += 1
        return frame


class RtcClient:
    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.headers = headers or {}
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.mic = Microphone()
        self.pc.addTrack(self.mic)
        self.channel = self.pc.createDataChannel("oai-events")
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.seen: list[dict[str, Any]] = []
        self.opened = asyncio.Event()
        self.closed = asyncio.Event()  # the server closed the data channel (the call ended)
        self.location: str | None = None
        # (index of the event last seen when it arrived, whether it was audible)
        self.frames: list[tuple[int, bool]] = []
        self._reader: asyncio.Task[None] | None = None
        self._audio_came = asyncio.Event()
        self.channel.on("open", self.opened.set)
        self.channel.on("close", self.closed.set)
        self.channel.on("message", self._on_message)
        self.pc.on("track", self._on_track)

    def _on_message(self, message: str | bytes) -> None:
        event = json.loads(message)
        self.seen.append(event)
        self.events.put_nowait(event)

    def _on_track(self, track: MediaStreamTrack) -> None:
        self._reader = asyncio.ensure_future(self._read(track))

    async def _read(self, track: MediaStreamTrack) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                samples = frame.to_ndarray().astype(np.float32)
                audible = float(np.sqrt(np.mean(samples**2))) > AUDIBLE_RMS
                self.frames.append((len(self.seen), audible))
                self._audio_came.set()

    async def offer(self) -> httpx.Response:
        """Send the offer; on 201 apply the answer."""
        await self.pc.setLocalDescription(await self.pc.createOffer())
        headers = {"content-type": "application/sdp", **self.headers}
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(
                f"http://{self.base}/v1/realtime/calls",
                content=self.pc.localDescription.sdp,
                headers=headers,
            )
        if reply.status_code == 201:
            self.location = reply.headers["location"]
            await self.pc.setRemoteDescription(RTCSessionDescription(reply.text, "answer"))
        return reply

    def send(self, event: dict[str, Any]) -> None:
        self.channel.send(json.dumps(event))

    async def until(
        self, stop: Callable[[dict[str, Any]], bool], within_s: float = 120
    ) -> list[dict[str, Any]]:
        """Events until `stop(event)` (included); fails after `within_s`."""
        got = []
        async with asyncio.timeout(within_s):
            while True:
                event = await self.events.get()
                got.append(event)
                if stop(event):
                    return got

    async def hear(self, frames: int) -> None:
        """Wait until `frames` audible frames of answer audio have come."""
        while self.audible_frames() < frames:
            self._audio_came.clear()
            await self._audio_came.wait()

    def audible_frames(self, after_event: int = 0) -> int:
        """Answer frames heard that arrived after the `after_event`-th event."""
        return sum(1 for seen, audible in self.frames if audible and seen >= after_event)

    async def close(self) -> None:
        await self.pc.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
