"""Server events as the beta dialect says them: the events' own wire form (the classes
are named after beta's events), less the events beta does not have."""

from __future__ import annotations

from app.protocol.server_events.base import ServerEvent, Wire
from app.protocol.server_events.conversation import ItemDone

# GA's events that beta lacks: a beta client does not get them.
NOT_IN_BETA = (ItemDone,)


def to_wire(event: ServerEvent, event_id: str) -> list[Wire]:
    if isinstance(event, NOT_IN_BETA):
        return []
    return [{**event.wire(), "event_id": event_id}]
