"""GPT-Live's server events (server_events/live.py): said in the Live dialect as the
protocol has them, kept out of the Realtime registry whose names they share, and a
Realtime event has no Live form (app/live/ translates those first)."""

from __future__ import annotations

from app.protocol.server_events import EVENT_TYPES, AudioDelta, Error, SessionUpdated
from app.protocol.server_events.live import (
    LIVE,
    LIVE_TYPES,
    DelegationCreated,
    InstructionsAppended,
    SessionStarted,
)
from app.protocol.server_events.live import SessionUpdated as LiveSessionUpdated
from app.protocol.server_events.wire import to_wire


def test_live_events_keep_a_registry_of_their_own() -> None:
    assert EVENT_TYPES[SessionUpdated.TYPE] is SessionUpdated  # not the Live one
    assert LIVE_TYPES[LiveSessionUpdated.TYPE] is LiveSessionUpdated
    assert set(LIVE_TYPES.values()).isdisjoint(EVENT_TYPES.values())


def test_a_client_event_id_is_echoed_only_when_the_client_gave_one() -> None:
    (with_id,) = to_wire(SessionStarted(session={"id": "s"}, client_event_id="c1"), LIVE, "e1")
    assert with_id == {
        "type": "session.started",
        "session": {"id": "s"},
        "client_event_id": "c1",
        "event_id": "e1",
    }
    (without,) = to_wire(InstructionsAppended(start_ms=5, end_ms=5), LIVE, "e2")
    assert without == {
        "type": "session.instructions.appended",
        "start_ms": 5,
        "end_ms": 5,
        "event_id": "e2",
    }


def test_a_delegation_is_an_object_with_its_target() -> None:
    created = DelegationCreated(delegation_id="deleg_1", target="client", offset_ms=120)
    (wire,) = to_wire(created, LIVE, "e3")
    assert wire["delegation"] == {"id": "deleg_1", "target": "client", "type": "delegation"}
    assert wire["offset_ms"] == 120


def test_a_refusal_carries_the_client_event_id_on_the_event_and_in_the_error() -> None:
    refusal = Error(
        code="unknown_parameter", message="no", param="session.voice", client_event_id="c2"
    )
    (wire,) = to_wire(refusal, LIVE, "e4")
    assert wire == {
        "type": "error",
        "event_id": "e4",
        "client_event_id": "c2",
        "error": {
            "type": "invalid_request_error",
            "code": "unknown_parameter",
            "message": "no",
            "param": "session.voice",
            "client_event_id": "c2",
        },
    }
    (bare,) = to_wire(Error(code="x", message="y"), LIVE, "e5")
    assert "client_event_id" not in bare and "param" not in bare["error"]


def test_a_realtime_event_has_no_live_form() -> None:
    assert to_wire(AudioDelta(response_id="r", item_id="i", delta="AAAA"), LIVE, "e6") == []
