"""An emulated xiaozhi board (for `bench voice --transport xiaozhi` and the tests in
tests/app/xiaozhi/). A xiaozhi board as the server sees one: the firmware's handshake headers and hello,
real Opus (libopus via PyAV) at the board's 16 kHz in 60 ms frames sent at real-time
pace, in protocol version 1, 2 or 3, and an MCP server answering like main/mcp_server.cc
(initialize, paged tools/list, tools/call of its speaker volume). It logs when each
message and answer frame arrived (`log`: monotonic time, JSON message or frame index)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import websockets

from app.audio import float_to_pcm16
from app.xiaozhi import framing
from app.xiaozhi.opus import OpusDecoder, OpusEncoder

RATE, FRAME_MS = 16000, 60
VOLUME_TOOL = {
    "name": "self.audio_speaker.set_volume",
    "description": "Set the volume of the audio speaker. If the current volume is unknown, "
    "you must call `self.get_device_status` tool first and then call this tool.",
    "inputSchema": {
        "type": "object",
        "properties": {"volume": {"type": "integer", "minimum": 0, "maximum": 100}},
        "required": ["volume"],
    },
}
STATUS_TOOL = {
    "name": "self.get_device_status",
    "description": "Provides the real-time information of the device, including the current "
    "status of the audio speaker, screen, battery, network, etc.",
    "inputSchema": {"type": "object", "properties": {}},
}


def hello(version: int = 1, mcp: bool = True, **audio: Any) -> dict[str, Any]:
    params = {"format": "opus", "sample_rate": RATE, "channels": 1, "frame_duration": FRAME_MS}
    return {
        "type": "hello",
        "version": version,
        "features": {"mcp": mcp},
        "transport": "websocket",
        "audio_params": {**params, **audio},
    }


@dataclass
class Board:
    """One emulated board. `mcp`: "ok" answers calls, "error" refuses them, "silent"
    never answers a tools/call."""

    address: str
    version: int = 1
    device_id: str = "aa:bb:cc:dd:ee:01"
    token: str = ""
    mcp: str = "ok"
    volume: int = 70
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    frames: int = 0  # Opus frames of answers received
    pcm: bytearray = field(default_factory=bytearray)  # what they decode to (24 kHz)
    close_reason: str = ""
    log: list[tuple[float, Any]] = field(default_factory=list)  # (arrived, message or frame)
    frame_ms: list[float] = field(default_factory=list)  # each answer frame's audio, in ms
    _ws: Any = None
    _reader: asyncio.Task[None] | None = None
    _decoder: OpusDecoder = field(default_factory=OpusDecoder)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _speech: list[tuple[np.ndarray, asyncio.Future[float]]] = field(default_factory=list)
    _mic: asyncio.Task[None] | None = None

    async def connect(self, hello_message: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = {"Protocol-Version": str(self.version), "Device-Id": self.device_id,
                   "Client-Id": "c0ffee00-0000-4000-8000-000000000001"}  # fmt: skip
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self._ws = await websockets.connect(
            f"ws://{self.address}/xiaozhi/v1/", additional_headers=headers, max_size=None
        )
        await self.send(hello_message or hello(self.version))
        answer = json.loads(await asyncio.wait_for(self._ws.recv(), 10))
        self._reader = asyncio.create_task(self._read())
        return answer

    async def send(self, message: dict[str, Any]) -> None:
        await self._ws.send(json.dumps(message, ensure_ascii=False))

    async def send_binary(self, data: bytes) -> None:
        await self._ws.send(data)

    async def speak(self, samples: np.ndarray, pace: float = 1.0) -> float:
        """Float samples at 16 kHz as Opus frames, one every 60 ms (`pace` 0: at once);
        returns when the last frame was sent."""
        encoder = OpusEncoder(RATE, FRAME_MS)
        packets = encoder.encode(float_to_pcm16(samples)) + encoder.flush()
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i, packet in enumerate(packets):
            await self._ws.send(framing.encode(packet, self.version, i * FRAME_MS))
            if pace:
                await asyncio.sleep(
                    max(0.0, start + (i + 1) * FRAME_MS / 1000 * pace - loop.time())
                )
        return time.monotonic()

    def microphone_on(self) -> None:
        """Stream the microphone from now on, as a board in `realtime` mode does: silence,
        and what `say` queues, one 60 ms frame at a time at real-time pace."""
        self._mic = asyncio.create_task(self._microphone())

    async def say(self, samples: np.ndarray) -> float:
        """Queue speech on the microphone; returns when its last frame was sent."""
        done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._speech.append((samples, done))
        return await done

    async def _microphone(self) -> None:
        encoder, size = OpusEncoder(RATE, FRAME_MS), RATE * FRAME_MS // 1000
        loop = asyncio.get_running_loop()
        start, sent = loop.time(), 0
        held = np.zeros(0, np.float32)
        while True:
            finished = None
            if held.size == 0 and self._speech:
                held, finished = self._speech[0][0], None
            chunk, held = held[:size], held[size:]
            if chunk.size and held.size == 0:
                finished = self._speech.pop(0)[1]
            chunk = np.pad(chunk, (0, size - chunk.size))
            for packet in encoder.encode(float_to_pcm16(chunk)):
                await self._ws.send(framing.encode(packet, self.version, sent * FRAME_MS))
            sent += 1
            if finished is not None:
                finished.set_result(time.monotonic())
            await asyncio.sleep(max(0.0, start + sent * FRAME_MS / 1000 - loop.time()))

    def of(self, kind: str, state: str | None = None) -> list[dict[str, Any]]:
        return [
            m for m in self.messages
            if m.get("type") == kind and (state is None or m.get("state") == state)
        ]  # fmt: skip

    async def wait_for(self, kind: str, state: str | None = None, count: int = 1,
                       within_s: float = 60) -> list[dict[str, Any]]:  # fmt: skip
        async def enough() -> None:
            while len(self.of(kind, state)) < count:
                if self._reader is not None and self._reader.done():
                    raise AssertionError(f"closed ({self.close_reason}) before {kind} {state}")
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(enough(), within_s)
        return self.of(kind, state)

    async def wait_frames(self, count: int, within_s: float = 30) -> None:
        """Until `count` Opus frames of answers have come."""

        async def enough() -> None:
            while self.frames < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(enough(), within_s)

    async def closed(self, within_s: float = 15) -> str:
        """The server's close reason, once it closes the socket."""
        assert self._reader is not None
        await asyncio.wait_for(asyncio.shield(self._reader), within_s)
        return self.close_reason

    async def close(self) -> None:
        if self._mic is not None:
            self._mic.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)

    async def _read(self) -> None:
        try:
            async for data in self._ws:
                if isinstance(data, bytes):
                    frame = framing.decode(data, self.version)
                    pcm = self._decoder.decode(frame.payload)
                    self.log.append((time.monotonic(), self.frames))
                    self.frame_ms.append(len(pcm) / 48)  # PCM16 at 24 kHz: 48 bytes a ms
                    self.frames += 1
                    self.pcm += pcm
                else:
                    message = json.loads(data)
                    self.log.append((time.monotonic(), message))
                    self.messages.append(message)
                    if message.get("type") == "mcp":
                        await self._answer_mcp(message["payload"])
                self._changed.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            self.close_reason = self._ws.close_reason or ""
            self._changed.set()

    async def _answer_mcp(self, request: dict[str, Any]) -> None:
        method, params, rid = request.get("method"), request.get("params") or {}, request.get("id")
        result: Any
        if method == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "emulated-board", "version": "2.0.0"}}  # fmt: skip
        elif method == "tools/list":  # one tool a page, as a board with a long list pages
            tools = [STATUS_TOOL, VOLUME_TOOL]
            index = int(params.get("cursor") or 0)
            more = str(index + 1) if index + 1 < len(tools) else ""
            result = {"tools": [tools[index]], "nextCursor": more}
        elif method == "tools/call":
            self.calls.append(params)
            if self.mcp == "silent":
                return
            if self.mcp == "error":
                error = {"code": -32603, "message": "speaker not available"}
                await self._reply({"jsonrpc": "2.0", "id": rid, "error": error})
                return
            if params.get("name") == VOLUME_TOOL["name"]:
                self.volume = int(params.get("arguments", {}).get("volume", self.volume))
                text = "true"
            else:
                text = json.dumps({"audio_speaker": {"volume": self.volume}})
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            error = {"code": -32601, "message": f"Method not implemented: {method}"}
            await self._reply({"jsonrpc": "2.0", "id": rid, "error": error})
            return
        await self._reply({"jsonrpc": "2.0", "id": rid, "result": result})

    async def _reply(self, payload: dict[str, Any]) -> None:
        await self.send({"session_id": "", "type": "mcp", "payload": payload})
