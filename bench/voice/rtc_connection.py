"""One Realtime WebRTC call (POST /v1/realtime/calls) that behaves like a microphone, with
the interface of the WebSocket client (`Conn`) so the same turns and trials run on it."""

from __future__ import annotations

from typing import Any

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import OutputAudioStarted, SessionCreated
from bench.voice.common import CHUNK_MS, RTC_AUDIO_FRAME, first_audible_ms
from bench.voice.connection import DELTA_AUDIBLE_MS, wait_in_log


def frame_audible_ms(frame: Any) -> float | None:
    """Where a decoded frame (PCM16, any rate, mono or interleaved) is first audible, in
    ms from its start (one channel heard); None: silence all through."""
    import numpy as np

    channels = len(frame.layout.channels)
    samples = np.asarray(frame.to_ndarray(), dtype=np.int16).reshape(-1, channels)[:, 0]
    return first_audible_ms(samples.tobytes(), frame.sample_rate)


class RtcConn:
    """An aiortc peer connection: a microphone track sending 20 ms frames of the queued
    speech at real-time pace (silence otherwise), the `oai-events` data channel feeding
    the log with (arrival time, event), and the answer's track: each audible frame that
    comes is logged as a `bench.rtc.audio_frame` event of the answer last announced by
    `output_audio_buffer.started` (WebRTC sends no audio deltas)."""

    def __init__(self) -> None:
        import asyncio

        self.log: list[tuple[float, dict[str, Any]]] = []
        self.closed = False
        self.mic_max_lag_ms = 0.0
        self.session: dict[str, Any] = {}
        self.mic_error: str | None = None
        self.pc: Any = None
        self.channel: Any = None
        self._new = asyncio.Event()
        self._speech: list[tuple[bytes, asyncio.Future[tuple[float, float]]]] = []
        self._offset = 0  # into the speech being sent
        self._first_at = 0.0
        self._playing: str | None = None  # the answer whose audio the track carries
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, base: str) -> RtcConn:
        """`base`: http://host:port; the offer goes to {base}/v1/realtime/calls."""

        import httpx
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

        from app.server.webrtc.input_reader import no_playout_delay

        conn = cls()
        conn.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        conn.pc.addTrack(_microphone_track(conn))
        for transceiver in conn.pc.getTransceivers():
            # the answer's frames are timed as they arrive, as the WebSocket client times
            # its deltas: aiortc's 4-packet playout buffer would add 80 ms a browser's
            # adaptive one does not hold on a clean link
            if transceiver.kind == "audio":
                no_playout_delay(transceiver.receiver)
        conn.channel = conn.pc.createDataChannel("oai-events")
        conn.channel.on("message", conn._on_message)
        conn.channel.on("close", conn._on_close)
        conn.pc.on("track", conn._on_track)
        try:
            await conn.pc.setLocalDescription(await conn.pc.createOffer())
            async with httpx.AsyncClient(timeout=30) as http:
                reply = await http.post(
                    f"{base}/v1/realtime/calls?r1voice_events=1",
                    content=conn.pc.localDescription.sdp,
                    headers={"content-type": "application/sdp"},
                )
            if reply.status_code != 201:
                raise ConnectionError(f"the offer got {reply.status_code}: {reply.text[:200]}")
            await conn.pc.setRemoteDescription(RTCSessionDescription(reply.text, "answer"))
            _, _, created = await conn.wait_for(
                lambda t, e: e["type"] == SessionCreated.TYPE, 0, 30
            )
        except (httpx.HTTPError, TimeoutError) as exc:
            await conn.close()
            raise ConnectionError(f"cannot open the call: {exc!r}") from exc
        except BaseException:
            await conn.close()
            raise
        conn.session = created["session"]
        return conn

    async def close(self) -> None:
        import asyncio
        import contextlib

        if self.pc is not None:
            with contextlib.suppress(Exception):
                await self.pc.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._fail_speech("the call is closed")

    async def send(self, event: dict[str, Any]) -> None:
        import json

        if self.channel is None or self.channel.readyState != "open":
            raise ConnectionError("the data channel is not open")
        self.channel.send(json.dumps(event))

    def _append(self, event: dict[str, Any]) -> None:
        import time

        self.log.append((time.monotonic(), event))
        self._new.set()

    def _on_message(self, message: str | bytes) -> None:
        import json

        event = json.loads(message)
        if event.get("type") == OutputAudioStarted.TYPE:
            self._playing = event.get("response_id")
        self._append(event)

    def _on_close(self) -> None:
        self.closed = True
        self._new.set()
        self._fail_speech("the server closed the data channel")

    def _on_track(self, track: Any) -> None:
        import asyncio

        self._reader = asyncio.ensure_future(self._read(track))

    async def _read(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError

        try:
            while True:
                frame = await track.recv()
                audible = frame_audible_ms(frame)
                if audible is not None:  # played on arrival: heard `audible` ms later
                    self._append(
                        {
                            "type": RTC_AUDIO_FRAME,
                            "response_id": self._playing,
                            DELTA_AUDIBLE_MS: audible,
                        }
                    )
        except MediaStreamError:
            pass

    def _fail_speech(self, why: str) -> None:
        if self.mic_error is None:
            self.mic_error = why
        for _, done in self._speech:
            if not done.done():
                done.set_exception(ConnectionError(f"the microphone stopped: {why}"))
        self._speech.clear()
        self._offset = 0

    def next_chunk(self, chunk_bytes: int, now: float) -> bytes:
        """The microphone's next 20 ms: queued speech, else silence; resolves `say`."""
        if not self._speech:
            return bytes(chunk_bytes)
        pcm, done = self._speech[0]
        piece = pcm[self._offset : self._offset + chunk_bytes]
        piece += bytes(chunk_bytes - len(piece))  # the last chunk ends in silence
        if self._offset == 0:
            self._first_at = now
        self._offset += chunk_bytes
        if self._offset >= len(pcm):
            self._speech.pop(0)
            self._offset = 0
            if not done.done():
                done.set_result((self._first_at, now))
        return piece

    async def say(self, pcm: bytes) -> tuple[float, float]:
        """Queue speech on the microphone; returns when (first chunk, last chunk) were
        handed to the RTP sender (it encodes and sends them right after)."""
        import asyncio

        if self.mic_error is not None:
            raise ConnectionError(f"the microphone stopped: {self.mic_error}")
        done: asyncio.Future[tuple[float, float]] = asyncio.get_running_loop().create_future()
        self._speech.append((pcm, done))
        return await done

    async def wait_for(
        self, match: Any, start: int, within_s: float
    ) -> tuple[int, float, dict[str, Any]]:
        """As `Conn.wait_for`: the first logged event from `start` that matches."""
        return await wait_in_log(
            self.log, self._new, lambda: self.closed, match, start, within_s, "call"
        )

    def events(self, start: int, end: int | None = None) -> list[tuple[float, dict[str, Any]]]:
        return self.log[start:end]


def _microphone_track(conn: RtcConn) -> Any:
    import asyncio
    import fractions
    import time

    from aiortc import MediaStreamTrack
    from aiortc.mediastreams import MediaStreamError
    from av import AudioFrame

    from app.audio import FrameResampler, float_to_pcm16, pcm16_to_float

    samples = PROTOCOL_RATE * CHUNK_MS // 1000
    chunk_bytes = samples * 2
    # A browser's microphone reaches the Opus encoder at 48 kHz; handed 24 kHz, aiortc's
    # encoder holds a whole frame back (app.audio.FrameResampler), 20 ms that a browser's
    # speech does not wait.
    out_rate = 48_000
    out_samples = out_rate * CHUNK_MS // 1000

    class Microphone(MediaStreamTrack):
        """The RTP sender pulls a frame every 20 ms; frame n is due at start + n * 20 ms,
        sent at once when late (as a microphone's buffered audio)."""

        kind = "audio"

        def __init__(self) -> None:
            super().__init__()
            self._start: float | None = None
            self._sent = 0
            self._upsample = FrameResampler(PROTOCOL_RATE, out_rate, out_samples)

        async def recv(self) -> Any:
            if self.readyState != "live":
                raise MediaStreamError
            if self._start is None:
                self._start = time.monotonic()
            due = self._start + self._sent * CHUNK_MS / 1000
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                conn.mic_max_lag_ms = max(conn.mic_max_lag_ms, -delay * 1000)
            piece = conn.next_chunk(chunk_bytes, time.monotonic())
            frame = AudioFrame(format="s16", layout="mono", samples=out_samples)
            frame.planes[0].update(float_to_pcm16(self._upsample.process(pcm16_to_float(piece))))
            frame.pts, frame.sample_rate = self._sent * out_samples, out_rate
            frame.time_base = fractions.Fraction(1, out_rate)
            self._sent += 1
            return frame

    return Microphone()
