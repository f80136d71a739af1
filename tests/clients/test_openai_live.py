"""The official `openai` Python SDK's GPT-Live clients, pointed at r1voice by its base URL
only: `client.live.connect()` over a real socket (a text turn, the initial history ending
with the user's question; an audio turn; an instructions append; the close) and
`client.live.create()` with an aiortc peer's offer (WebRTC). Every server event is
checked against the event models the SDK ships."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import typing
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from aiortc import RTCSessionDescription
from openai.types.live import ServerEvent
from pydantic import BaseModel, ValidationError

from app.audio import PROTOCOL_RATE
from tests.app.server.routes.rtc_client import RtcClient
from tests.clients.conftest import BARGE_IN_S, SHORT_ANSWER, ScriptedServer, speech_pcm

# websockets' legacy module, imported by the SDK, warns on import.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(600)]

TIMEOUT_S = 180  # generous: two shared CPU cores run ASR and TTS for every turn


def models_by_type(union: Any) -> dict[str, type[BaseModel]]:
    """The SDK's event models by their `type` (its unions discriminate on it)."""
    members = typing.get_args(typing.get_args(union)[0])
    return {kind: m for m in members for kind in typing.get_args(m.model_fields["type"].annotation)}


MODELS = models_by_type(ServerEvent)


class Client:
    """One SDK connection; a background reader keeps every raw server event."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.raw: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(Exception):  # the server closes after session.closed
            while True:
                data = await self.connection.recv_bytes()
                self.connection.parse_event(data)  # the SDK's own parsing accepts it
                self.raw.append(json.loads(data))
                self._changed.set()
        self._changed.set()

    async def wait(self, kind: str, match: Callable[[Any], bool] = bool) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            while True:
                for event in self.raw:
                    if event["type"] == kind and match(event):
                        return event
                if self._reader.done():
                    raise AssertionError(f"the connection ended before {kind}")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), TIMEOUT_S)

    async def wait_audio(self, size: int) -> None:
        while len(self.audio()) < size:
            await self.wait("session.output_audio.delta", lambda e: len(self.audio()) >= size)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.raw if e["type"] == kind]

    def audio(self) -> bytes:
        return b"".join(base64.b64decode(e["delta"]) for e in self.of("session.output_audio.delta"))

    def said(self) -> str:
        return "".join(e["delta"] for e in self.of("session.output_transcript.delta"))

    def invalid(self) -> list[str]:
        """The server events the SDK's models refuse."""
        bad = []
        for event in self.raw:
            model = MODELS.get(event["type"])
            if model is None:
                bad.append(f"{event['type']}: not a Live event")
                continue
            try:
                model.model_validate(event)
            except ValidationError as exc:
                bad.append(f"{event['type']}: {str(exc).splitlines()[1:3]}")
        return bad


@contextlib.asynccontextmanager
async def connect(address: str) -> AsyncIterator[Client]:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=f"http://{address}/v1")
    async with client.live.connect() as connection:
        session = Client(connection)
        try:
            yield session
        finally:
            session._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await session._reader


async def close(client: Client) -> dict[str, Any]:
    await client.connection.session.close(event_id="bye")
    return await client.wait("session.closed")


def test_text_turn_then_close(scripted_server: ScriptedServer) -> None:
    question = {"role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]}

    async def main(address: str) -> Client:
        async with connect(address) as client:
            session = {"model": "gpt-live-1", "instructions": "Be brief.", "input": [question]}
            await client.connection.session.start(session=session, event_id="go")
            await client.wait("session.started")
            await client.wait("session.output_transcript.delta", lambda e: "Paris" in e["delta"])
            await client.wait_audio(PROTOCOL_RATE)  # half a second of PCM16 at 24 kHz
            await close(client)
            return client

    with scripted_server(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    (started,) = client.of("session.started")
    assert started["client_event_id"] == "go"
    assert started["session"]["model"] == "gpt-live-1"
    assert client.said() == "".join(SHORT_ANSWER)
    (closed,) = client.of("session.closed")
    assert (closed["reason"], closed["client_event_id"]) == ("close_requested", "bye")
    assert client.raw[-1]["type"] == "session.closed"
    assert client.invalid() == []


def test_audio_turn_and_instructions_append(scripted_server: ScriptedServer) -> None:
    async def main(address: str) -> Client:
        async with connect(address) as client:
            live = client.connection.session
            fmt = {"type": "audio/pcm", "rate": PROTOCOL_RATE}
            await live.start(session={"model": "gpt-live-1.1", "audio": {"format": fmt}})
            await client.wait("session.started")
            await live.instructions.append(content="Answer in one sentence.", delegation_id=None)
            await client.wait("session.instructions.appended")
            pcm = speech_pcm(BARGE_IN_S)
            step = PROTOCOL_RATE * 2 // 50  # 20 ms of PCM16
            for i in range(0, len(pcm), step):
                await live.input_audio.append(audio=base64.b64encode(pcm[i : i + step]).decode())
            await client.wait("session.output_transcript.delta", lambda e: "Paris" in e["delta"])
            await close(client)
            return client

    with scripted_server(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    heard = "".join(e["delta"] for e in client.of("session.input_transcript.delta"))
    # "And so, my fellow Americans"; a pause after "And so" may end the turn there
    assert any(w in heard.lower() for w in ("and so", "fellow", "americans")), heard
    assert client.said().endswith("".join(SHORT_ANSWER))  # after what a split turn cut
    assert len(client.audio()) > 0
    assert client.of("session.usage.updated") != []
    assert client.raw[-1]["type"] == "session.closed"
    assert client.invalid() == []


def test_webrtc_session_from_live_create(scripted_server: ScriptedServer) -> None:
    """`client.live.create()` with an aiortc peer's offer: the answer, `session.started`
    on the data channel, a text turn heard on the audio track, the close."""
    question: Any = {
        "role": "user",
        "content": [{"type": "input_text", "text": "Capital of France?"}],
    }

    async def main(address: str) -> tuple[RtcClient, str]:
        rtc = RtcClient(address)
        try:
            await rtc.pc.setLocalDescription(await rtc.pc.createOffer())
            sdk = openai.AsyncOpenAI(api_key="sk-test", base_url=f"http://{address}/v1")
            created = await sdk.live.create(
                session={"model": "gpt-live-1", "input": [question]},
                transport={"type": "webrtc", "sdp": rtc.pc.localDescription.sdp},
            )
            answer = RTCSessionDescription(created.transport.sdp, "answer")
            await rtc.pc.setRemoteDescription(answer)
            await rtc.until(lambda e: e["type"] == "session.started")
            await asyncio.wait_for(rtc.hear(10), TIMEOUT_S)  # 200 ms of the answer, audible
            await rtc.until(lambda e: "Paris" in e.get("delta", ""))
            rtc.send({"type": "session.close", "event_id": "bye"})
            await rtc.until(lambda e: e["type"] == "session.closed")
            return rtc, created.session.id
        finally:
            await rtc.close()

    with scripted_server(SHORT_ANSWER) as address:
        rtc, session_id = asyncio.run(main(address))
    (started,) = [e for e in rtc.seen if e["type"] == "session.started"]
    assert started["session"]["id"] == session_id
    said = "".join(e["delta"] for e in rtc.seen if e["type"] == "session.output_transcript.delta")
    assert said == "".join(SHORT_ANSWER)
    assert [e for e in rtc.seen if e["type"] == "error"] == []
    assert rtc.seen[-1]["type"] == "session.closed"
    assert rtc.seen[-1]["client_event_id"] == "bye"
    for event in rtc.seen:
        if event["type"] in MODELS:
            MODELS[event["type"]].model_validate(event)
