"""A real server (real VAD, ASR and TTS; a scripted LLM) and a raw WebSocket client that
speaks GPT-Live's events to it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import websockets

from app.llm.catalog import LLMCatalog
from tests.clients.conftest import serve
from tests.conftest import app_with
from tests.fakes import ScriptedLLM

TIMEOUT_S = 180  # generous: two shared CPU cores run ASR and TTS for every turn
START = {"model": "gpt-live-1"}


class LiveClient:
    """One Live connection; a background reader keeps every server event."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for message in self.ws:
                self.events.append(json.loads(message))
                self._changed.set()
        self._changed.set()

    async def send(self, event: dict[str, Any]) -> int:
        """Send one event; returns the count of events received before it."""
        n = len(self.events)
        await self.ws.send(json.dumps(event))
        return n

    async def wait(
        self, kind: str, after: int = 0, match: Callable[[dict[str, Any]], bool] = bool
    ) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            while True:
                for event in self.events[after:]:
                    if event["type"] == kind and match(event):
                        return event
                if self._reader.done():
                    raise AssertionError(f"the connection ended before {kind}: {self.types()}")
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(scan(), TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"no {kind} in {TIMEOUT_S} s: {self.events[after:]}") from None

    async def closed(self) -> None:
        await asyncio.wait_for(self._reader, TIMEOUT_S)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def types(self, after: int = 0) -> list[str]:
        return [e["type"] for e in self.events[after:]]

    async def start(self, **session: Any) -> dict[str, Any]:
        n = await self.send(
            {"type": "session.start", "event_id": "start_1", "session": {**START, **session}}
        )
        return await self.wait("session.started", after=n)

    async def send_audio(self, audio: bytes, chunk: int) -> None:
        for i in range(0, len(audio), chunk):
            part = base64.b64encode(audio[i : i + chunk]).decode()
            await self.send({"type": "session.input_audio.append", "audio": part})

    async def wait_audio(self, size: int) -> None:
        """Until `size` bytes of answer audio have come (Live says no answer's end)."""

        async def scan() -> None:
            while len(self.audio()) < size:
                if self._reader.done():
                    raise AssertionError(f"the connection ended with {len(self.audio())} bytes")
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(scan(), TIMEOUT_S)

    def audio(self) -> bytes:
        return b"".join(base64.b64decode(e["delta"]) for e in self.of("session.output_audio.delta"))

    def said(self) -> str:
        return "".join(e["delta"] for e in self.of("session.output_transcript.delta"))


@contextlib.asynccontextmanager
async def live_connection(
    address: str, headers: dict[str, str] | None = None
) -> AsyncIterator[LiveClient]:
    url = f"ws://{address}/v1/live/sessions"
    async with websockets.connect(url, max_size=None, additional_headers=headers) as ws:
        client = LiveClient(ws)
        try:
            yield client
        finally:
            client._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await client._reader


@pytest.fixture
def scripted_live(shared_components: Any) -> Callable[..., Any]:
    """`scripted_live(*answers, **settings)`: a server whose LLM replays the answers in
    turn; yields "127.0.0.1:PORT"."""

    @contextmanager
    def start(
        *answers: list[str], llm: Any = None, backend: Any = None, **settings: Any
    ) -> Iterator[str]:
        """`llm`: the live model, in place of one replaying `answers`; `backend`: an LLM
        served as every other model of the catalog (server delegation)."""
        llm = llm or ScriptedLLM(list(answers))
        components = dataclasses.replace(shared_components, llm=llm)
        if backend is not None:
            components = dataclasses.replace(
                components, llms=LLMCatalog(llm, load=lambda _name: backend)
            )
        with serve(app_with(components, **settings)) as address:
            yield address

    return start
