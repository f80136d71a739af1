"""The server event classes: each is serialised by the golden test, and is said in each
dialect as the protocol wants."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.protocol import events
from app.protocol.dialect import BETA, GA
from app.protocol.server_events import (
    EVENT_TYPES,
    AudioDelta,
    Error,
    ItemCreated,
    ItemDone,
    ServerEvent,
    TranscriptionCompleted,
    Wire,
    wire,
)
from app.protocol.server_events.wire import to_wire
from app.realtime.outbox import Outbox
from tests.app.protocol.golden_cases import cases


def test_the_golden_cases_hold_every_event_class() -> None:
    for ga in (True, False):
        assert {type(event) for _, event in cases(ga)} == set(EVENT_TYPES.values())


def test_a_finished_item_is_added_then_done_in_ga_and_created_in_beta() -> None:
    item = events.message_item("item_1", "user", "completed", [])
    created = ItemCreated(previous_item_id=None, item=item)
    assert [e["type"] for e in to_wire(created, GA, "event_1")] == [
        "conversation.item.added",
        ItemDone.TYPE,
    ]
    assert [e["event_id"] for e in to_wire(created, GA, "event_1")] == ["event_1", "event_1_done"]
    assert [e["type"] for e in to_wire(created, BETA, "event_1")] == [ItemCreated.TYPE]
    in_progress = ItemCreated(previous_item_id=None, item={**item, "status": "in_progress"})
    assert len(to_wire(in_progress, GA, "event_1")) == 1
    assert to_wire(ItemDone(item=item), BETA, "event_1") == []


def test_events_read_as_their_beta_wire_fields() -> None:
    delta = AudioDelta(response_id="resp_1", delta="AAAA", item_id="item_1")
    assert (delta["type"], delta["content_index"]) == (AudioDelta.TYPE, 0)
    assert to_wire(delta, GA, "e")[0]["type"] == "response.output_audio.delta"
    error = Error(code="bad", message="no", client_event_id="evt_1")
    assert error["error"] == {
        "type": "invalid_request_error",
        "code": "bad",
        "message": "no",
        "param": None,
        "event_id": "evt_1",
    }


def test_a_field_left_out_is_not_sent_and_a_none_is_sent_as_null() -> None:
    usage = {"type": "duration", "seconds": 1.0}
    silent = TranscriptionCompleted(item_id="item_1", transcript="", usage=usage)
    heard = TranscriptionCompleted(item_id="item_1", transcript="", usage=usage, language=None)
    assert "language" not in to_wire(silent, GA, "e")[0]
    assert to_wire(heard, GA, "e")[0]["language"] is None


def test_a_new_dialect_is_one_function_registered_in_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    def shouted(event: ServerEvent, event_id: str) -> list[Wire]:
        return [{**event.wire(), "type": event.TYPE.upper(), "event_id": event_id}]

    monkeypatch.setitem(wire.DIALECTS, "shouted", shouted)

    async def main() -> dict[str, Any] | None:
        outbox = Outbox("shouted")
        outbox.emit(AudioDelta(response_id="resp_1", delta="AAAA", item_id="item_1"))
        return await outbox.get()

    sent = asyncio.run(main())
    assert sent is not None and sent["type"] == "RESPONSE.AUDIO.DELTA" and sent["delta"] == "AAAA"
