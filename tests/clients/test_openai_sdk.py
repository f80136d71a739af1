"""The official `openai` Python SDK's realtime clients, GA (`client.realtime`) and beta
(`client.beta.realtime`, which sends `OpenAI-Beta: realtime=v1`), pointed at r1voice by
URL only, over a real socket: a text turn, an audio turn, a barge-in that truncates the
answer while it plays, and a tool call round trip. Every server event is checked against
the event models the SDK ships for its dialect."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import typing
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.realtime import RealtimeServerEvent as GAServerEvent
from pydantic import BaseModel, ValidationError

from app.audio import PROTOCOL_RATE
from tests.clients.conftest import BARGE_IN_S, LONG_ANSWER, SHORT_ANSWER, ScriptedServer, speech_pcm
from tests.conftest import user_text_item

# websockets' legacy module, imported by the SDK, warns on import.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TIMEOUT_S = 180  # generous: two shared CPU cores run ASR and TTS for every turn
DIALECTS = ["ga", "beta"]


def models_by_type(union: Any) -> dict[str, type[BaseModel]]:
    """The SDK's event models by their `type` (its unions discriminate on it)."""
    members = typing.get_args(typing.get_args(union)[0])
    return {kind: m for m in members for kind in typing.get_args(m.model_fields["type"].annotation)}


MODELS = {"ga": models_by_type(GAServerEvent), "beta": models_by_type(BetaServerEvent)}
# The names that differ between the dialects (the rest are the same).
NAMES = {
    "ga": {"audio": "response.output_audio.delta", "text": "response.output_text.delta"},
    "beta": {"audio": "response.audio.delta", "text": "response.text.delta"},
}


class Client:
    """One SDK connection; a background reader keeps every raw server event."""

    def __init__(self, connection: Any, dialect: str) -> None:
        self.connection, self.dialect = connection, dialect
        self.raw: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            data = await self.connection.recv_bytes()
            self.connection.parse_event(data)  # the SDK's own parsing accepts it
            self.raw.append(json.loads(data))
            self._changed.set()

    async def wait(self, kind: str, after: int = 0, match: Callable[[Any], bool] = bool) -> Any:
        """The first raw event of type `kind` from index `after` on (that `match`es)."""

        async def scan() -> dict[str, Any]:
            while True:
                for event in self.raw[after:]:
                    if event["type"] == kind and match(event):
                        return event
                if self._reader.done():
                    self._reader.result()
                    raise AssertionError(f"the connection ended before {kind}")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), TIMEOUT_S)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.raw if e["type"] == kind]

    def invalid(self) -> list[str]:
        """The server events the SDK's models for this dialect refuse."""
        bad = []
        for event in self.raw:
            model = MODELS[self.dialect].get(event["type"])
            if model is None:
                bad.append(f"{event['type']}: not an event of this dialect")
                continue
            try:
                model.model_validate(event)
            except ValidationError as exc:
                bad.append(f"{event['type']}: {str(exc).splitlines()[1:3]}")
        return bad

    async def send_pcm(self, pcm: bytes, realtime: bool = False) -> None:
        step = PROTOCOL_RATE * 2 // 50  # 20 ms of PCM16
        for i in range(0, len(pcm), step):
            chunk = base64.b64encode(pcm[i : i + step]).decode()
            await self.connection.input_audio_buffer.append(audio=chunk)
            if realtime:
                await asyncio.sleep(0.02)

    async def update(self, **session: Any) -> None:
        if self.dialect == "ga":
            session = {"type": "realtime", **session}
        n = len(self.raw)
        await self.connection.session.update(session=session)
        await self.wait("session.updated", after=n)

    async def ask(self, text: str) -> int:
        """A user text item and a response.create; returns the event index before them."""
        n = len(self.raw)
        await self.connection.conversation.item.create(item=user_text_item(text))
        await self.connection.response.create()
        return n


@contextlib.asynccontextmanager
async def connect(address: str, dialect: str) -> AsyncIterator[Client]:
    client = openai.AsyncOpenAI(api_key="sk-test", websocket_base_url=f"ws://{address}/v1")
    realtime = client.realtime if dialect == "ga" else client.beta.realtime
    async with realtime.connect(model="r1voice") as connection:
        session = Client(connection, dialect)
        try:
            created = await session.wait("session.created")
            assert ("type" in created["session"]) == (dialect == "ga")  # its own dialect
            yield session
        finally:
            session._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await session._reader


def modalities(dialect: str, *kinds: str) -> dict[str, Any]:
    return {"output_modalities" if dialect == "ga" else "modalities": list(kinds)}


def spoken(dialect: str) -> dict[str, Any]:
    """Spoken answers: GA names one output modality, beta names both."""
    return modalities(dialect, "audio") if dialect == "ga" else modalities(dialect, "text", "audio")


def transcript_of(client: Client, response_id: str) -> str:
    kind = NAMES[client.dialect]["audio"].replace("audio.delta", "audio_transcript.delta")
    return "".join(e["delta"] for e in client.of(kind) if e["response_id"] == response_id)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_text_turn(scripted_server: ScriptedServer, dialect: str) -> None:
    async def main(address: str) -> Client:
        async with connect(address, dialect) as client:
            await client.update(**modalities(dialect, "text"))
            await client.wait("response.done", after=await client.ask("The capital of France?"))
            return client

    with scripted_server(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    (done,) = client.of("response.done")
    assert done["response"]["status"] == "completed"
    text = "".join(e["delta"] for e in client.of(NAMES[dialect]["text"]))
    assert text == "".join(SHORT_ANSWER)
    assert client.invalid() == []


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_audio_turn(scripted_server: ScriptedServer, dialect: str) -> None:
    async def main(address: str) -> Client:
        async with connect(address, dialect) as client:
            await client.update(**spoken(dialect))
            # one phrase: server_vad's 500 ms window would split all of JFK into turns
            await client.send_pcm(speech_pcm(BARGE_IN_S))
            await client.wait("response.done")
            return client

    with scripted_server(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    (transcribed,) = client.of("conversation.item.input_audio_transcription.completed")
    assert "fellow" in transcribed["transcript"].lower()  # "And so, my fellow Americans"
    (committed,) = client.of("input_audio_buffer.committed")
    assert committed["item_id"] == transcribed["item_id"]
    (done,) = client.of("response.done")
    assert transcript_of(client, done["response"]["id"]) == "".join(SHORT_ANSWER)
    audio = b"".join(base64.b64decode(e["delta"]) for e in client.of(NAMES[dialect]["audio"]))
    assert len(audio) / 2 / PROTOCOL_RATE >= 0.5
    assert client.invalid() == []


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_barge_in_truncates_the_answer_while_it_plays(
    scripted_server: ScriptedServer, dialect: str
) -> None:
    """As a client app does: play the answer; on speech_started stop playback and truncate
    the item at what was played; the item ends `incomplete` holding what was heard."""

    async def main(address: str) -> tuple[Client, str, int]:
        async with connect(address, dialect) as client:
            await client.update(**spoken(dialect))
            first_audio = await client.wait(NAMES[dialect]["audio"], await client.ask("A story?"))
            started_playing = time.monotonic()
            answer_id = first_audio["item_id"]
            talking = asyncio.create_task(client.send_pcm(speech_pcm(BARGE_IN_S), realtime=True))
            await client.wait("input_audio_buffer.speech_started")
            played_ms = int((time.monotonic() - started_playing) * 1000)
            await client.connection.conversation.item.truncate(
                item_id=answer_id, content_index=0, audio_end_ms=played_ms
            )
            await client.wait("conversation.item.truncated")
            n = len(client.raw)
            await client.connection.conversation.item.retrieve(item_id=answer_id)
            await client.wait("conversation.item.retrieved", after=n)
            await talking
            await client.wait("conversation.item.input_audio_transcription.completed")
            await client.wait("response.done", after=n)  # the barge-in is answered
            return client, answer_id, played_ms

    with scripted_server(LONG_ANSWER) as address:
        client, answer_id, played_ms = asyncio.run(main(address))
    assert client.of("error") == []  # the truncate was accepted
    (truncated,) = client.of("conversation.item.truncated")
    assert (truncated["item_id"], truncated["audio_end_ms"]) == (answer_id, played_ms)
    first_done = client.of("response.done")[0]["response"]
    assert first_done["status"] == "cancelled"
    assert first_done["status_details"]["reason"] == "turn_detected"
    (retrieved,) = client.of("conversation.item.retrieved")
    item = retrieved["item"]
    assert item["status"] == "incomplete"
    heard = item["content"][0]["transcript"]
    full = "".join(LONG_ANSWER)
    assert heard and full.startswith(heard) and len(heard) < len(full)  # heard, no more
    assert client.invalid() == []


TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_tool_call_round_trip(scripted_server: ScriptedServer, dialect: str) -> None:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'

    async def main(address: str) -> Client:
        async with connect(address, dialect) as client:
            await client.update(tools=[TOOL], tool_choice="auto", **modalities(dialect, "text"))
            n = await client.ask("What is the weather in Paris?")
            done = await client.wait("response.done", after=n)
            (call_item,) = done["response"]["output"][1:]
            output = {
                "type": "function_call_output",
                "call_id": call_item["call_id"],
                "output": "It is sunny in Paris.",
            }
            n = len(client.raw)
            await client.connection.conversation.item.create(item=output)
            await client.connection.response.create()
            await client.wait("response.done", after=n)
            return client

    with scripted_server([call], ["It is sunny ", "in Paris."]) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    first, second = (e["response"] for e in client.of("response.done"))
    calls = [i for i in first["output"] if i["type"] == "function_call"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    (arguments,) = client.of("response.function_call_arguments.done")
    assert json.loads(arguments["arguments"]) == {"city": "Paris"}
    streamed = client.of("response.function_call_arguments.delta")
    assert "".join(d["delta"] for d in streamed) == arguments["arguments"]
    text = "".join(e["delta"] for e in client.of(NAMES[dialect]["text"]))
    assert text == "It is sunny in Paris."  # the call itself is never shown as text
    assert second["status"] == "completed"
    assert client.invalid() == []
