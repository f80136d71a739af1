"""The tasks a Live session handed to its client, by delegation id: open until the
client's commentary (its answer) arrives; appends naming an unknown or finished id are
refused."""

from __future__ import annotations

from app.protocol import events
from app.protocol.errors import ProtocolError


class Delegations:
    def __init__(self) -> None:
        self._open: dict[str, str] = {}  # id -> the task, as the live model put it
        self._finished: set[str] = set()

    def create(self, task: str) -> str:
        delegation_id = events.new_id("deleg")
        self._open[delegation_id] = task
        return delegation_id

    def check(self, delegation_id: str, event_id: str | None) -> None:
        if delegation_id in self._open:
            return
        if delegation_id in self._finished:
            raise ProtocolError(
                "delegation_finished",
                f"delegation {delegation_id!r} is finished (its commentary was appended): "
                "append without delegation_id, or answer an open delegation",
                param="delegation_id",
                event_id=event_id,
            )
        raise ProtocolError(
            "delegation_not_found",
            f"no delegation {delegation_id!r} in this session: use the id of a "
            "session.delegation.created event",
            param="delegation_id",
            event_id=event_id,
        )

    def finish(self, delegation_id: str) -> None:
        self._open.pop(delegation_id, None)
        self._finished.add(delegation_id)
