"""Twilio's side of a media stream, written from Twilio's documented messages: a phone
caller for `bench voice --transport twilio` and the telephony tests.

It sends what Twilio sends: `connected`, `start` (streamSid, callSid, the TwiML's custom
parameters, mediaFormat audio/x-mulaw 8 kHz mono), then the caller's line as 20 ms `media`
frames of mu-law at real-time pace for as long as the call lasts (queued speech, else
the line's silence), `dtmf` for a key and `stop` to hang up. It plays what comes back
as Twilio does: `media` frames back to back on its own clock, each `mark` echoed once the
audio before it has played, and on `clear` the buffered audio dropped and its marks
echoed at once. Every message is logged with its arrival time; a media frame's payload
is replaced by whether it is audible and when it plays. `telnyx=True` speaks Telnyx's
variant of the same protocol (`stream_id`, `call_control_id`, `media_format` PCMU).
"""

from __future__ import annotations

from typing import Any

RATE = 8000
FRAME_MS = 20
FRAME_BYTES = RATE * FRAME_MS // 1000  # mu-law: a byte a sample
SILENCE = b"\xff" * FRAME_BYTES
AUDIBLE_RMS = 100.0  # as the WebSocket's bench hears PCM16 (common.AUDIBLE_RMS)


def audible(frame: bytes) -> bool:
    """Whether a mu-law frame holds sound, not the line's silence."""
    import numpy as np

    from app.audio import decode_audio

    samples = decode_audio(frame, "audio/pcmu") * 32768.0
    return bool(samples.size) and float(np.sqrt(np.mean(samples**2))) > AUDIBLE_RMS


class TwilioCaller:
    """One call's media stream over a WebSocket `ws` (the `websockets` client)."""

    def __init__(self, ws: Any, stream_sid: str) -> None:
        import asyncio

        self.ws, self.stream_sid = ws, stream_sid
        self.log: list[tuple[float, dict[str, Any]]] = []
        self.closed = False
        self.close_code: int | None = None
        self.close_reason = ""
        self._new = asyncio.Event()
        self._speech: list[tuple[bytes, asyncio.Future[tuple[float, float]]]] = []
        self._plays_until = 0.0  # when the audio received so far has all played
        self._marks: list[tuple[str, float]] = []  # (name, when the audio before it ends)
        self._tasks: list[asyncio.Task[None]] = []
        self._sequence = 0
        self._key = "streamSid"  # where a message names its stream
        self.max_lag_ms = 0.0  # the line's frames sent late (this process's CPU busy)

    @classmethod
    async def open(
        cls,
        url: str,
        parameters: dict[str, str] | None = None,
        call_sid: str = "CAbench",
        telnyx: bool = False,
    ) -> TwilioCaller:
        """`telnyx`: speak Telnyx's variant (`stream_id`, `call_control_id`, PCMU)."""
        import asyncio
        import secrets

        import websockets

        ws = await websockets.connect(url, max_size=None, open_timeout=30)
        caller = cls(ws, "MZ" + secrets.token_hex(16))
        await caller.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        if telnyx:  # Telnyx's shape: its ids and format under other names
            caller._key = "stream_id"
            fmt = {"encoding": "PCMU", "sample_rate": 8000, "channels": 1}
            start = {"call_control_id": call_sid, "media_format": fmt}
            await caller.send({"event": "start", "start": start, "stream_id": caller.stream_sid})
        else:
            await caller._twilio_start(parameters, call_sid)
        caller._tasks = [
            asyncio.create_task(caller._receive()),
            asyncio.create_task(caller._line()),
            asyncio.create_task(caller._echo_marks()),
        ]
        return caller

    async def _twilio_start(self, parameters: dict[str, str] | None, call_sid: str) -> None:
        start = {
            "accountSid": "ACbench",
            "streamSid": self.stream_sid,
            "callSid": call_sid,
            "tracks": ["inbound"],
            "customParameters": parameters or {},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": RATE, "channels": 1},
        }
        await self.send({"event": "start", "start": start, "streamSid": self.stream_sid})

    async def send(self, message: dict[str, Any]) -> None:
        import json

        self._sequence += 1
        await self.ws.send(json.dumps({**message, "sequenceNumber": str(self._sequence)}))

    async def press(self, digit: str) -> None:
        dtmf = {"track": "inbound_track", "digit": digit}
        await self.send({"event": "dtmf", self._key: self.stream_sid, "dtmf": dtmf})

    async def say(self, ulaw: bytes) -> tuple[float, float]:
        """Queue speech (8 kHz mu-law) on the line; returns when its first and last
        frames were sent."""
        import asyncio

        done: asyncio.Future[tuple[float, float]] = asyncio.get_running_loop().create_future()
        self._speech.append((ulaw, done))
        return await done

    async def hang_up(self) -> None:
        import asyncio
        import contextlib

        with contextlib.suppress(Exception):
            await self.send({"event": "stop", self._key: self.stream_sid, "stop": {}})
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.ws.close()

    # -- what comes back --------------------------------------------------------------

    def of(self, event: str, start: int = 0) -> list[tuple[float, dict[str, Any]]]:
        return [(t, m) for t, m in self.log[start:] if m.get("event") == event]

    async def wait_for(self, match: Any, start: int, within_s: float) -> tuple[int, float, dict]:
        """The first logged message from `start` with match(message) true: (index, arrival,
        message); TimeoutError past `within_s`, ConnectionError once the stream closed."""
        import asyncio
        import contextlib
        import time

        deadline = time.monotonic() + within_s
        i = start
        while True:
            while i < len(self.log):
                t, message = self.log[i]
                if match(message):
                    return i, t, message
                i += 1
            if self.closed:
                raise ConnectionError(f"the stream closed: {self.close_code} {self.close_reason}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no such message in time")
            self._new.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new.wait(), left)

    async def _receive(self) -> None:
        import base64
        import json
        import time

        try:
            async for text in self.ws:
                now = time.monotonic()
                message = json.loads(text)
                event = message.get("event")
                if event == "media":
                    frame = base64.b64decode(message["media"]["payload"])
                    plays_at = max(now, self._plays_until)
                    self._plays_until = plays_at + len(frame) / RATE
                    message["media"] = {
                        "bytes": len(frame),
                        "audible": audible(frame),
                        "plays_at": plays_at,
                    }
                elif event == "mark":
                    self._marks.append((message["mark"]["name"], self._plays_until))
                elif event == "clear":  # Twilio drops what it holds and echoes its marks
                    self._plays_until = now
                    marks, self._marks = self._marks, []
                    for name, _ in marks:
                        await self._echo(name)
                message["_at"] = now  # for matches on the message alone
                self.log.append((now, message))
                self._new.set()
        except Exception:
            pass
        finally:
            self.closed = True
            self.close_code = getattr(self.ws, "close_code", None)
            self.close_reason = getattr(self.ws, "close_reason", "") or ""
            self._new.set()

    async def _echo(self, name: str) -> None:
        await self.send({"event": "mark", self._key: self.stream_sid, "mark": {"name": name}})

    async def _echo_marks(self) -> None:
        import asyncio
        import time

        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            while self._marks and self._marks[0][1] <= now:
                await self._echo(self._marks.pop(0)[0])

    async def _line(self) -> None:
        """The caller's line: 20 ms frames at real-time pace, speech when queued."""
        import asyncio
        import base64
        import time

        t0, sent, offset, first_at = time.monotonic(), 0, 0, 0.0
        while True:
            delay = t0 + sent * FRAME_MS / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                self.max_lag_ms = max(self.max_lag_ms, -delay * 1000)
            frame = SILENCE
            if self._speech:
                ulaw, done = self._speech[0]
                frame = ulaw[offset : offset + FRAME_BYTES]
                frame += SILENCE[: FRAME_BYTES - len(frame)]
                if offset == 0:
                    first_at = time.monotonic()
                offset += FRAME_BYTES
                if offset >= len(ulaw):
                    self._speech.pop(0)
                    offset = 0
                    if not done.done():
                        done.set_result((first_at, time.monotonic()))
            payload = base64.b64encode(frame).decode()
            media = {"track": "inbound", "chunk": str(sent + 1), "payload": payload}
            media["timestamp"] = str(sent * FRAME_MS)
            await self.send({"event": "media", self._key: self.stream_sid, "media": media})
            sent += 1
