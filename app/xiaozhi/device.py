"""A xiaozhi device's WebSocket as a Realtime session's transport (app/server/transport.py).

What the device sends becomes what a Realtime client would send: Opus frames become the
session's PCM, `listen` sets turn detection (`auto` and `realtime`: the server's VAD,
`realtime` speaking over answers; `manual`: the device's button commits the turn),
`detect` (a wake word) starts a turn, `abort` cancels the answer. The session's events go
back through `Replies`; a function call it asks for runs on the device over MCP and its
result (or an apology for the device's error or silence) continues the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import WebSocket

from app.protocol.server_events import SpeechStarted
from app.server.transport import InputPcm, Received
from app.xiaozhi import framing
from app.xiaozhi.hello import DeviceHello
from app.xiaozhi.mcp import McpClient, McpError
from app.xiaozhi.opus import OpusDecoder, OpusError
from app.xiaozhi.replies import FunctionCall, Replies

log = logging.getLogger("r1voice.xiaozhi")

INSTRUCTIONS = (
    "You are the voice of a small speaker device the user talks to across the room. "
    "Answer in one or two short spoken sentences, without lists, markdown or emojis, in "
    "the language the user speaks. When the user asks the device to do something its "
    "tools can do (its volume, screen, lights), call the tool, then say what you did."
)
APOLOGY = (
    "The device could not do what was asked ({error}). Apologise to the user in one short "
    "sentence, in the language they speak, and say it did not work."
)
BURST_FRAMES = 100  # Opus frames a device may send at once (6 s of 60 ms frames)
PACE_FACTOR = 3.0  # above the burst, frames may come at most this much faster than played


TURNS = ("conversation.item.create", "response.create", "input_audio_buffer.commit")


class DeviceError(Exception):
    """What the device did wrong: closes its WebSocket with `code` and the message."""

    def __init__(self, code: str, message: str, close_code: int = 1008) -> None:
        super().__init__(message)
        self.code, self.close_code = code, close_code


@dataclass(frozen=True)
class DeviceOptions:
    llm_model: str = ""  # empty: the server's own
    asr_model: str = ""
    voice: str = ""
    turn_detection: str = "server_vad"
    mcp_timeout_s: float = 5.0


class FrameBudget:
    """A token bucket over a device's frames: a flood is refused, not queued."""

    def __init__(self, frame_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = PACE_FACTOR * 1000 / frame_ms
        self._tokens, self._clock = float(BURST_FRAMES), clock
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(BURST_FRAMES, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class DeviceTransport:
    def __init__(
        self,
        websocket: WebSocket,
        hello: DeviceHello,
        session_id: str,
        options: DeviceOptions,
        on_error: Callable[[str], None],
    ) -> None:
        """`on_error(code)`: the device was closed for what it sent (counted in /metrics)."""
        self._ws, self._hello, self._options = websocket, hello, options
        self._session_id, self._on_error = session_id, on_error
        self._queue: asyncio.Queue[Received | None] = asyncio.Queue()
        self._decoder = OpusDecoder()
        self._budget = FrameBudget(hello.frame_ms)
        self._send_lock = asyncio.Lock()
        self.replies = Replies(session_id, self._send_json, self._send_opus)
        self.mcp = McpClient(self._send_mcp, options.mcp_timeout_s)
        self.mode = "auto"
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.tools: list[dict[str, Any]] = []
        # A turn asked for before the device's tools are known waits for them (a wake word
        # with its command in the first second): without them the model cannot call one.
        self._held: list[dict[str, Any]] | None = [] if hello.mcp else None

    def start(self) -> None:
        """Configure the session, read the device, and ask it for its tools."""
        options = self._options
        session: dict[str, Any] = {
            "instructions": INSTRUCTIONS,
            "turn_detection": {"type": options.turn_detection},
            "input_audio_transcription": {"model": options.asr_model or None, "language": None},
        }
        if not options.asr_model:
            del session["input_audio_transcription"]["model"]
        if options.llm_model:
            session["model"] = options.llm_model
        if options.voice:
            session["voice"] = options.voice
        self._put({"type": "session.update", "session": session})
        self._spawn(self._read())
        if self._hello.mcp:
            self._spawn(self._discover())

    # -- Transport ---------------------------------------------------------------------
    async def receive(self) -> Received | None:
        return await self._queue.get()

    async def send(self, text: str) -> None:
        event = json.loads(text)
        if event.get("type") == SpeechStarted.TYPE and self.mode == "realtime":
            # Speech over the answer: the board stops playing now (a Realtime client stops
            # its player on this event); if it was no barge-in the answer comes back.
            await self.replies.pause()
        for call in await self.replies.handle(event):
            self._spawn(self._call(call))

    async def close(self, code: int, reason: str) -> None:
        self._closed = True
        self.replies.close()
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(code=code, reason=reason[:120]), timeout=2)

    # -- the device's messages ---------------------------------------------------------
    async def _read(self) -> None:
        try:
            while True:
                message = await self._ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                data = message.get("bytes")
                if data is not None:
                    pcm = self._audio(data)
                    if pcm:
                        self._put(InputPcm(pcm))
                else:
                    await self._control(message.get("text") or "")
        except DeviceError as exc:
            log.info("device session %s closed: %s", self._session_id, exc)
            self._on_error(exc.code)
            await self.close(exc.close_code, str(exc))
        except Exception as exc:  # the socket went away under the read
            log.debug("device read ended: %r", exc)
        finally:
            self._queue.put_nowait(None)

    def _audio(self, data: bytes) -> bytes:
        if not self._budget.take():
            raise DeviceError(
                "flood", "Opus frames came far faster than real time; send them as recorded"
            )
        try:
            frame = framing.decode(data, self._hello.version)
        except framing.FrameError as exc:
            raise DeviceError("bad_frame", str(exc), 1007) from None
        if frame.type == framing.JSON:
            raise DeviceError("bad_frame", "a JSON frame in a binary message; send JSON as text")
        try:
            return self._decoder.decode(frame.payload)
        except OpusError as exc:
            raise DeviceError("bad_opus", str(exc), 1007) from None

    async def _control(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            raise DeviceError("bad_json", "a text message that is not JSON", 1007) from None
        if not isinstance(message, dict):
            raise DeviceError("bad_json", "a text message must be a JSON object", 1007)
        kind = message.get("type")
        if kind == "listen":
            self._listen(message)
        elif kind == "abort":
            self._put({"type": "response.cancel"})
            await self.replies.stop()
        elif kind == "mcp":
            why = self.mcp.receive(message.get("payload"))
            if why is not None:
                raise DeviceError("bad_mcp", why, 1007)
        elif kind != "hello":  # a repeated hello changes nothing
            log.debug("device message of type %r ignored", kind)

    def _listen(self, message: dict[str, Any]) -> None:
        state, mode = message.get("state"), message.get("mode", self.mode)
        if state == "start":
            if mode not in ("auto", "manual", "realtime"):
                raise DeviceError(
                    "bad_listen", f"listen mode {mode!r}: use auto, manual or realtime"
                )
            if mode != self.mode:
                detection = None if mode == "manual" else {"type": self._options.turn_detection}
                self._put({"type": "session.update", "session": {"turn_detection": detection}})
            self.mode = mode
            self.replies.listening(realtime=mode == "realtime")
            if mode == "manual":
                self._put({"type": "input_audio_buffer.clear"})
        elif state == "stop" and self.mode == "manual":
            self._put({"type": "input_audio_buffer.commit"})
            self._put({"type": "response.create"})
        elif state == "detect" and isinstance(message.get("text"), str) and message["text"]:
            item = {"type": "message", "role": "user"}
            item["content"] = [{"type": "input_text", "text": message["text"]}]  # type: ignore[assignment]
            self._put({"type": "conversation.item.create", "item": item})
            self._put({"type": "response.create"})

    # -- tools -------------------------------------------------------------------------
    async def _discover(self) -> None:
        try:
            self.tools = await self.mcp.tools()
        except (McpError, KeyError, TypeError, AttributeError) as exc:  # a list not as documented
            log.info("device session %s: no tools (%r)", self._session_id, exc)
        if self.tools:
            self._put({"type": "session.update", "session": {"tools": self.tools}})
        held, self._held = self._held or [], None
        for event in held:
            self._put(event)

    async def _call(self, call: FunctionCall) -> None:
        response: dict[str, Any] = {}
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise McpError("the call's arguments are not an object")
            output = await self.mcp.call(call.name, arguments)
        except (McpError, ValueError) as exc:
            output = json.dumps({"error": str(exc)}, ensure_ascii=False)
            response = {"instructions": APOLOGY.format(error=exc)}
        item = {"type": "function_call_output", "call_id": call.call_id, "output": output}
        self._put({"type": "conversation.item.create", "item": item})
        self._put({"type": "response.create", "response": response})

    # -- sending -----------------------------------------------------------------------
    def _put(self, event: dict[str, Any] | InputPcm) -> None:
        if self._held is not None and isinstance(event, dict) and event["type"] in TURNS:
            self._held.append(event)
        elif not self._closed:
            self._queue.put_nowait(event if isinstance(event, InputPcm) else json.dumps(event))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_json(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            await self._ws.send_text(json.dumps(message, ensure_ascii=False))

    async def _send_opus(self, packet: bytes) -> None:
        async with self._send_lock:
            await self._ws.send_bytes(framing.encode(packet, self._hello.version))

    async def _send_mcp(self, payload: dict[str, Any]) -> None:
        await self._send_json({"session_id": self._session_id, "type": "mcp", "payload": payload})
