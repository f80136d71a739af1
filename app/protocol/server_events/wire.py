"""A server event as a client of each dialect receives it: none, one or more wire events,
the last field of each its `event_id`. One module per dialect says how; adding a dialect
is adding its module here."""

from __future__ import annotations

from collections.abc import Callable

from app.protocol.dialect import BETA, GA
from app.protocol.server_events import beta, ga, live
from app.protocol.server_events.base import ServerEvent, Wire

DIALECTS: dict[str, Callable[[ServerEvent, str], list[Wire]]] = {
    BETA: beta.to_wire,
    GA: ga.to_wire,
    live.LIVE: live.to_wire,
}


def to_wire(event: ServerEvent, dialect: str, event_id: str) -> list[Wire]:
    return DIALECTS[dialect](event, event_id)
