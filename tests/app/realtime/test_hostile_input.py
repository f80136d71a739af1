"""Hostile input gets a specific error, never a `server_error` or a dead session, and a
client that stops reading cannot grow the server's memory."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from app.protocol.dialect import GA
from app.protocol.server_events import (
    AudioDelta,
    InputAudioCleared,
    ResponseDone,
    SessionUpdated,
    ga,
)
from app.protocol.server_events.wire import to_wire
from app.realtime.outbox import Outbox, serialize
from tests.conftest import user_text_item

SURROGATE = '{"type": "conversation.item.create", "event_id": "e1", "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "\\ud800"}]}}'


@pytest.mark.parametrize(
    ("raw", "code", "param"),
    [
        (SURROGATE, "invalid_value", None),
        ("[" * 5000 + "]" * 5000, "invalid_json", None),
        (
            json.dumps(
                {"type": "session.update", "session": {"type": "realtime", "audio": {"input": "x"}}}
            ),
            "invalid_value",
            "session.audio.input",
        ),
    ],
)
def test_hostile_events_get_a_specific_error_and_the_session_goes_on(
    app_client: TestClient, raw: str, code: str, param: str | None
) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        ws.send_text(raw)
        error = ws.receive_json()
        assert error["type"] == "error", error
        assert (error["error"]["code"], error["error"]["param"]) == (code, param)
        if "e1" in raw:
            assert error["error"]["event_id"] == "e1"
        ws.send_text(json.dumps({"type": "input_audio_buffer.clear"}))  # an empty buffer too
        assert ws.receive_json()["type"] == InputAudioCleared.TYPE


AUDIO = AudioDelta(response_id="resp_1", delta="A" * 1000, item_id="item_1")


def test_outbox_is_bounded() -> None:
    async def main() -> tuple[int, bool, list[str]]:
        outbox = Outbox(GA, max_events=100, max_bytes=10_000)
        for _ in range(50):
            outbox.emit(AUDIO)
        queued = []
        outbox.close()
        while (event := await outbox.get()) is not None:
            queued.append(event["type"])
        return len(queued), outbox.overflowed.is_set(), queued[:1]

    count, overflowed, first = asyncio.run(main())
    assert overflowed and count < 50  # stopped at the byte bound
    one = len(serialize(to_wire(AUDIO, GA, "event_0123456789abcdef0123")[0]))
    assert count == 10_000 // one
    assert first == [ga.RENAMED[AudioDelta]]


def test_outbox_counts_the_bytes_it_really_queues() -> None:
    """Bug: each event counted as 256 bytes plus its `delta`, so a `session.updated`
    echoing 1 MiB of instructions counted 256 and a client that never read grew the
    server by 1.5 GB in 40 s."""

    async def main() -> tuple[int, int, bool]:
        outbox = Outbox(GA, max_events=1000, max_bytes=1_000_000)
        session = {"type": "realtime", "instructions": "x" * 90_000}
        outbox.emit(SessionUpdated(session=session))
        queued = outbox.queued_bytes
        for _ in range(20):  # 1.8 MB of echoes: past the byte bound
            outbox.emit(SessionUpdated(session=session))
        overflowed = outbox.overflowed.is_set()
        kept = outbox.queued_bytes
        outbox.discard()
        return queued, kept, overflowed and outbox.queued_bytes == 0

    queued, kept, overflowed_then_discarded = asyncio.run(main())
    assert 90_000 < queued < 90_200
    assert kept <= 1_000_000 and kept // queued == 11
    assert overflowed_then_discarded


def test_outbox_accounts_bytes_as_events_leave() -> None:
    async def main() -> bool:
        outbox = Outbox(GA, max_events=100, max_bytes=5_000)
        for _ in range(200):  # a reading client: never more than a few queued
            outbox.emit(AUDIO)
            await outbox.get()
        return outbox.overflowed.is_set()

    assert asyncio.run(main()) is False


@pytest.mark.parametrize(
    ("event", "param"),
    [
        ({"type": "session.update", "session": {"instructions": "x" * 100_001}}, "session.instructions"),
        ({"type": "response.create", "response": {"instructions": "x" * 100_001}}, "response.instructions"),
    ],
)  # fmt: skip
def test_instructions_are_bounded(
    app_client: TestClient, event: dict[str, object], param: str
) -> None:
    """`instructions` go back in every `session.updated` and into every prompt: at most
    100,000 characters, refused by name."""
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({**event, "event_id": "e1"}))
        error = ws.receive_json()
        assert error["type"] == "error", error
        assert (error["error"]["code"], error["error"]["param"]) == ("invalid_value", param)
        assert "100000" in error["error"]["message"] and error["error"]["event_id"] == "e1"


def test_instructions_longer_than_the_context_are_the_clients_error(
    app_client: TestClient,
) -> None:
    """Bug: `response.create` with instructions past the context failed as a
    `server_error` without the client's `event_id`."""
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({"type": "conversation.item.create", "item": user_text_item("Hi")}))
        response = {"instructions": "word " * 19_000, "output_modalities": ["text"]}
        ws.send_text(
            json.dumps({"type": "response.create", "event_id": "e7", "response": response})
        )
        seen = []
        while (event := ws.receive_json())["type"] != ResponseDone.TYPE:
            seen.append(event)
        errors = [e["error"] for e in seen if e["type"] == "error"]
        assert [(e["code"], e["type"], e["event_id"]) for e in errors] == [
            ("context_length_exceeded", "invalid_request_error", "e7")
        ]
        assert event["response"]["status"] == "failed"


def test_an_item_larger_than_the_context_is_refused_when_created(
    app_client: TestClient,
) -> None:
    """Bug: a 99,000-character item (~38k tokens, past the whole context) was accepted,
    and every later turn failed until the client deleted it."""
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        big = {**user_text_item("word " * 19_800), "id": "item_big"}
        ws.send_text(
            json.dumps({"type": "conversation.item.create", "event_id": "e2", "item": big})
        )
        error = ws.receive_json()
        assert error["type"] == "error", error
        code, param, event_id = (error["error"][k] for k in ("code", "param", "event_id"))
        assert (code, param, event_id) == ("context_length_exceeded", "item", "e2")
        assert "tokens" in error["error"]["message"]
        ws.send_text(json.dumps({"type": "conversation.item.retrieve", "item_id": "item_big"}))
        assert ws.receive_json()["error"]["code"] == "item_not_found"  # nothing was kept
        ws.send_text(json.dumps({"type": "conversation.item.create", "item": user_text_item("Hi")}))
        ws.send_text(
            json.dumps({"type": "response.create", "response": {"output_modalities": ["text"]}})
        )
        while (event := ws.receive_json())["type"] != ResponseDone.TYPE:
            pass
        assert event["response"]["status"] == "completed"  # the conversation goes on
