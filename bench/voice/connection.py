"""One Realtime WebSocket client that behaves like a microphone."""

from __future__ import annotations

from typing import Any

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import SessionCreated
from bench.voice.common import AUDIO_DELTAS, CHUNK_MS, first_audible_ms

# What the log keeps of an audio delta's PCM16 (24 kHz, the sessions' output format): its
# length, and where in it the answer is first audible (None: silence all through)
DELTA_MS = "bench_ms"
DELTA_AUDIBLE_MS = "bench_audible_ms"


def heard_at(deltas: list[tuple[float, dict[str, Any]]]) -> float | None:
    """When a player would sound an answer's first audible sample, given its audio deltas
    in order with their arrival times: it starts at the first, plays them back to back, and
    waits for one that comes late (the WebRTC client times the first audible frame)."""
    plays_at: float | None = None  # when the next delta's first sample plays
    for arrived, event in deltas:
        start = arrived if plays_at is None else max(arrived, plays_at)
        audible = event.get(DELTA_AUDIBLE_MS)
        if audible is not None:
            return start + audible / 1000
        plays_at = start + event.get(DELTA_MS, 0.0) / 1000
    return None


class Conn:
    """One Realtime WebSocket: a receiver logging (arrival time, event) and a microphone
    sending 20 ms chunks at real-time pace for as long as the connection is open:
    queued speech, otherwise silence."""

    def __init__(self, ws: Any) -> None:
        import asyncio

        self.ws = ws
        self.log: list[tuple[float, dict[str, Any]]] = []
        self.closed = False
        self.mic_max_lag_ms = 0.0
        self.session: dict[str, Any] = {}
        self.mic_error: str | None = None
        self._new = asyncio.Event()
        self._speech: list[tuple[bytes, asyncio.Future[tuple[float, float]]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        # called with (response id, base64 audio) of each audio delta before the log
        # elides it (the echo bench plays it back into the microphone)
        self.on_audio: Any = None

    @classmethod
    async def open(cls, url: str) -> Conn:
        import asyncio

        import websockets
        from websockets.typing import Subprotocol

        ws = await websockets.connect(
            url, subprotocols=[Subprotocol("realtime")], max_size=None, open_timeout=30
        )
        conn = cls(ws)
        conn._tasks = [
            asyncio.create_task(conn._receive()),
            asyncio.create_task(conn._microphone()),
        ]
        _, _, created = await conn.wait_for(lambda t, e: e["type"] == SessionCreated.TYPE, 0, 30)
        conn.session = created["session"]
        return conn

    async def close(self) -> None:
        import asyncio
        import contextlib

        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.ws.close()

    async def send(self, event: dict[str, Any]) -> None:
        import json

        await self.ws.send(json.dumps(event))

    async def _receive(self) -> None:
        import base64
        import json
        import time

        try:
            async for message in self.ws:
                t = time.monotonic()
                event = json.loads(message)
                if event.get("type") in AUDIO_DELTAS:  # keep the log small: size, not audio
                    if self.on_audio is not None:
                        self.on_audio(event.get("response_id"), event.get("delta") or "")
                    pcm = base64.b64decode(event.get("delta") or "")
                    event["delta"] = len(event.get("delta") or "")
                    event[DELTA_MS] = len(pcm) / 2 / PROTOCOL_RATE * 1000
                    event[DELTA_AUDIBLE_MS] = first_audible_ms(pcm)
                self.log.append((t, event))
                self._new.set()
        finally:
            self.closed = True
            self._new.set()

    async def _microphone(self) -> None:
        try:
            await self._microphone_loop()
        except Exception as exc:  # the connection is gone: nobody waits forever on say()
            self.mic_error = f"{type(exc).__name__}: {exc}"
            for _, done in self._speech:
                if not done.done():
                    done.set_exception(ConnectionError(f"the microphone stopped: {self.mic_error}"))
            self._speech.clear()

    # PCM16 mono bytes of one microphone chunk
    chunk_bytes = PROTOCOL_RATE * CHUNK_MS // 1000 * 2

    def frame(self, pcm: bytes) -> str | bytes:
        """One chunk of microphone audio as the server takes it."""
        import base64
        import json

        audio = base64.b64encode(pcm).decode()
        return json.dumps({"type": "input_audio_buffer.append", "audio": audio})

    async def _microphone_loop(self) -> None:
        import asyncio
        import time

        chunk_bytes = self.chunk_bytes
        silence = self.frame(bytes(chunk_bytes))
        t0 = time.monotonic()
        sent = 0
        offset = 0  # into the speech being sent
        first_at = 0.0
        while True:
            due = t0 + sent * CHUNK_MS / 1000
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:  # late: send at once, like a microphone's buffered audio
                self.mic_max_lag_ms = max(self.mic_max_lag_ms, -delay * 1000)
            if not self._speech:
                await self.ws.send(silence)
                sent += 1
                continue
            pcm, done = self._speech[0]
            piece = pcm[offset : offset + chunk_bytes]
            piece += bytes(chunk_bytes - len(piece))  # the last chunk ends in silence
            await self.ws.send(self.frame(piece))
            now = time.monotonic()
            sent += 1
            if offset == 0:
                first_at = now
            offset += chunk_bytes
            if offset >= len(pcm):
                self._speech.pop(0)
                offset = 0
                if not done.done():
                    done.set_result((first_at, now))

    async def say(self, pcm: bytes) -> tuple[float, float]:
        """Queue speech on the microphone; returns when (first chunk, last chunk) were sent."""
        import asyncio

        if self.mic_error is not None:
            raise ConnectionError(f"the microphone stopped: {self.mic_error}")
        done: asyncio.Future[tuple[float, float]] = asyncio.get_running_loop().create_future()
        self._speech.append((pcm, done))
        return await done

    async def wait_for(
        self, match: Any, start: int, within_s: float
    ) -> tuple[int, float, dict[str, Any]]:
        """The first logged event from index `start` with match(arrival, event) true:
        (index, arrival time, event). TimeoutError if none arrives within `within_s`,
        or ConnectionError if closed."""
        return await wait_in_log(
            self.log, self._new, lambda: self.closed, match, start, within_s, "connection"
        )

    def events(self, start: int, end: int | None = None) -> list[tuple[float, dict[str, Any]]]:
        return self.log[start:end]


async def wait_in_log(
    log: list[tuple[float, dict[str, Any]]],
    new: Any,
    closed: Any,
    match: Any,
    start: int,
    within_s: float,
    what: str,
) -> tuple[int, float, dict[str, Any]]:
    """The first event of `log` from `start` with match(arrival, event) true, waiting on
    the asyncio.Event `new` (set on each logged event) until `closed()` or `within_s`."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    i = start
    while True:
        while i < len(log):
            t, event = log[i]
            if match(t, event):
                return i, t, event
            i += 1
        if closed():
            raise ConnectionError(f"the server closed the {what}")
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError
        new.clear()
        try:
            await asyncio.wait_for(new.wait(), remaining)
        except TimeoutError:
            raise TimeoutError from None
