"""The server event classes: each is serialised by the golden test, and says itself in
each dialect as the protocol wants."""

from __future__ import annotations

from app.protocol import events
from app.protocol.dialect import BETA, GA
from app.protocol.server_events import (
    EVENT_TYPES,
    AudioDelta,
    Error,
    ItemCreated,
    ItemDone,
    TranscriptionCompleted,
)
from tests.app.protocol.golden_cases import cases


def test_the_golden_cases_hold_every_event_class() -> None:
    for ga in (True, False):
        assert {type(event) for _, event in cases(ga)} == set(EVENT_TYPES.values())


def test_a_finished_item_is_added_then_done_in_ga_and_created_in_beta() -> None:
    item = events.message_item("item_1", "user", "completed", [])
    created = ItemCreated(previous_item_id=None, item=item)
    assert [e["type"] for e in created.to_wire(GA, "event_1")] == [
        "conversation.item.added",
        ItemDone.TYPE,
    ]
    assert [e["event_id"] for e in created.to_wire(GA, "event_1")] == ["event_1", "event_1_done"]
    assert [e["type"] for e in created.to_wire(BETA, "event_1")] == [ItemCreated.TYPE]
    in_progress = ItemCreated(previous_item_id=None, item={**item, "status": "in_progress"})
    assert len(in_progress.to_wire(GA, "event_1")) == 1
    assert ItemDone(item=item).to_wire(BETA, "event_1") == []


def test_events_read_as_their_beta_wire_fields() -> None:
    delta = AudioDelta(response_id="resp_1", delta="AAAA", item_id="item_1")
    assert (delta["type"], delta["content_index"]) == (AudioDelta.TYPE, 0)
    assert AudioDelta.GA_TYPE == "response.output_audio.delta"
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
    assert "language" not in silent.to_wire(GA, "e")[0]
    assert heard.to_wire(GA, "e")[0]["language"] is None
