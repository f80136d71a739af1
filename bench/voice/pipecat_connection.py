"""One client of the Pipecat peer (bench/capacity/pipecat_bot.py) that behaves like `Conn`: a
microphone sending 20 ms chunks at real-time pace, and a log of what came back, written
as the Realtime events `bench.voice.client` reads.

Pipecat's WebSocket transport speaks protobuf `Frame`s (pipecat/frames/frames.proto):
audio both ways, and RTVI messages as JSON in a `MessageFrame`. They are encoded here
by hand (a few varints and length-delimited fields) so that the client needs neither
protobuf nor Pipecat in r1voice's environment. The events logged:
- `bot-ready` (the pipeline is running; the microphone opens): `session.created`;
- `bot-started-speaking` (or the first audio of an answer): `response.created`;
- each audio frame: `response.output_audio.delta` (its size);
- `bot-stopped-speaking`: `response.done` (`completed`), or `cancelled` after an
  `InterruptionFrame`; the answer's text (`bot-tts-text`) as its
  transcript;
- a final `user-transcription`: the turn's transcript.
"""

from __future__ import annotations

import json
from typing import Any

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import (
    AudioDelta,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    SpeechStopped,
    ga,
)
from bench.voice.common import ANSWER_DONE, CHUNK_MS, TRANSCRIPT_DONE
from bench.voice.connection import Conn

PIPECAT_RATE = 16_000  # what the bot's pipeline hears (PipelineParams.audio_in_sample_rate)
_AUDIO, _MESSAGE, _INTERRUPTION = 2, 4, 5  # Frame's oneof fields


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def audio_frame(pcm: bytes, sample_rate: int = PIPECAT_RATE) -> bytes:
    """Frame{audio: AudioRawFrame{audio, sample_rate, num_channels: 1}}."""
    raw = _field(3, pcm) + _varint(4 << 3) + _varint(sample_rate) + _varint(5 << 3) + _varint(1)
    return _field(_AUDIO, raw)


def message_frame(data: dict[str, Any]) -> bytes:
    return _field(_MESSAGE, _field(1, json.dumps(data).encode()))


def _fields(buf: bytes) -> dict[int, bytes | int]:
    """The fields of one protobuf message (the last of each number; no groups)."""
    out: dict[int, bytes | int] = {}
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number], i = _read_varint(buf, i)
        elif wire == 2:
            size, i = _read_varint(buf, i)
            out[number], i = buf[i : i + size], i + size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"protobuf wire type {wire} is not expected here")
    return out


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = buf[i]
        i += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, i


def read_frame(data: bytes) -> tuple[str, Any]:
    """("audio", pcm bytes) | ("message", dict) | ("interruption", None) | ("other", None)."""
    frame = _fields(data)
    if isinstance(audio := frame.get(_AUDIO), bytes):
        pcm = _fields(audio).get(3, b"")
        return "audio", pcm if isinstance(pcm, bytes) else b""
    if isinstance(message := frame.get(_MESSAGE), bytes):
        body = _fields(message).get(1, b"")
        try:
            return "message", json.loads(body) if isinstance(body, bytes) else {}
        except ValueError:
            return "other", None
    if _INTERRUPTION in frame:
        return "interruption", None
    return "other", None


class PipecatConn(Conn):
    """A session with the Pipecat peer, logged as the Realtime events a `Conn` logs; the
    microphone is `Conn`'s, in Pipecat's frames at 16 kHz."""

    chunk_bytes = PIPECAT_RATE * CHUNK_MS // 1000 * 2

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self._answer: str | None = None  # the id of the answer being spoken
        self._answers = 0
        self._text: list[str] = []
        self._interrupted = False

    @classmethod
    async def open(cls, url: str, ready_timeout: float = 120.0) -> PipecatConn:
        import asyncio

        import websockets

        ws = await websockets.connect(url.removeprefix("pipecat+"), max_size=None, open_timeout=30)
        conn = cls(ws)
        await ws.send(message_frame({"label": "rtvi-ai", "type": "client-ready", "id": "1"}))
        conn._tasks = [asyncio.create_task(conn._receive())]
        # The microphone opens at `bot-ready`, as Pipecat's own clients wait for it. The
        # bot builds each session's pipeline (loads Whisper, Piper, the VAD) before it
        # reads the socket: speech sent meanwhile reached its VAD later as one burst, the
        # turn ended before Whisper had it, and the turn went unanswered.
        try:
            await conn.wait_for(lambda t, e: e["type"] == SessionCreated.TYPE, 0, ready_timeout)
        except BaseException:
            await conn.close()
            raise
        conn._tasks.append(asyncio.create_task(conn._microphone()))
        return conn

    def frame(self, pcm: bytes) -> str | bytes:
        return audio_frame(pcm)

    async def send(self, event: dict[str, Any]) -> None:
        raise NotImplementedError(
            "the Pipecat peer takes audio only: no Realtime client events (typed turns)"
        )

    def _emit(self, t: float, event: dict[str, Any]) -> None:
        self.log.append((t, event))
        self._new.set()

    def _start_answer(self, t: float) -> str:
        if self._answer is None:
            self._answers += 1
            self._answer = f"pipecat_{self._answers}"
            self._text, self._interrupted = [], False
            self._emit(t, {"type": ResponseCreated.TYPE, "response": {"id": self._answer}})
        return self._answer

    def _end_answer(self, t: float) -> None:
        rid, self._answer = self._answer, None
        if rid is None:
            return
        text = "".join(self._text).strip()
        self._emit(t, {"type": ANSWER_DONE[1], "response_id": rid, "transcript": text})
        status = "cancelled" if self._interrupted else "completed"
        self._emit(t, {"type": ResponseDone.TYPE, "response": {"id": rid, "status": status}})

    async def _receive(self) -> None:
        import time

        try:
            async for data in self.ws:
                t = time.monotonic()
                if not isinstance(data, bytes):
                    continue
                kind, body = read_frame(data)
                if kind == "audio":
                    rid = self._start_answer(t)
                    self._emit(
                        t,
                        {"type": ga.RENAMED[AudioDelta], "response_id": rid,
                         "delta": len(body)},
                    )  # fmt: skip
                elif kind == "interruption":
                    self._interrupted = True
                elif kind == "message":
                    self._on_message(t, body)
        finally:
            self.closed = True
            self._new.set()

    def _on_message(self, t: float, message: dict[str, Any]) -> None:
        kind, data = message.get("type"), message.get("data") or {}
        if kind == "bot-ready":
            self._emit(t, {"type": SessionCreated.TYPE, "session": {}})
        elif kind == "bot-started-speaking":
            self._start_answer(t)
        elif kind == "bot-stopped-speaking":
            self._end_answer(t)
        elif kind == "bot-tts-text" and self._answer is not None:
            self._text.append(str(data.get("text") or ""))
        elif kind == "user-transcription" and data.get("final"):
            self._emit(t, {"type": TRANSCRIPT_DONE, "transcript": data.get("text") or ""})
        elif kind == "user-stopped-speaking":
            self._emit(t, {"type": SpeechStopped.TYPE})

    async def say(self, pcm: bytes) -> tuple[float, float]:
        """Queue speech (PCM16 mono at the Realtime wire rate, 24 kHz; sent at 16 kHz);
        returns when (first chunk, last chunk) were sent."""
        import numpy as np

        from app.audio import resample

        samples = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0
        low = resample(samples, PROTOCOL_RATE, PIPECAT_RATE)
        return await super().say((np.clip(low, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes())
