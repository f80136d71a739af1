"""Hostile input gets a specific error, never a `server_error` or a dead session, and a
client that stops reading cannot grow the server's memory."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from app.realtime.outbox import Outbox

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
        assert ws.receive_json()["type"] == "input_audio_buffer.cleared"


def test_outbox_is_bounded() -> None:
    async def main() -> tuple[int, bool, list[str]]:
        outbox = Outbox("ga", max_events=100, max_bytes=10_000)
        for i in range(50):
            outbox.emit({"type": "response.output_audio.delta", "delta": "A" * 1000, "i": i})
        queued = []
        outbox.close()
        while (event := await outbox.get()) is not None:
            queued.append(event["type"])
        return len(queued), outbox.overflowed.is_set(), queued[:1]

    count, overflowed, first = asyncio.run(main())
    assert overflowed and count < 50  # stopped at the byte bound
    assert count == 10_000 // (1000 + 256)
    assert first == ["response.output_audio.delta"]


def test_outbox_accounts_bytes_as_events_leave() -> None:
    async def main() -> bool:
        outbox = Outbox("ga", max_events=100, max_bytes=5_000)
        for _ in range(200):  # a reading client: never more than a few queued
            outbox.emit({"type": "x", "delta": "A" * 1000})
            await outbox.get()
        return outbox.overflowed.is_set()

    assert asyncio.run(main()) is False
