"""A trusted server's sideband to a running Live session (`/v1/live/sessions/{id}/attach`):
it observes the session's events (all but the answer's audio) and controls it as the
primary client may (instructions, thinking and commentary appends, answers to
delegations and to the delegated model's function calls, `session.update`,
`session.close`); no audio, no `session.start`. Its
refusals go out with the session's events, to every connection of the session."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from app.live.live_session import LiveSession
from app.protocol.errors import ProtocolError
from app.protocol.server_events.live import LIVE
from app.realtime.outbox import Outbox

# The running Live sessions, by id (a sideband finds its session here).
RUNNING: dict[str, LiveSession] = {}
CONTROL = {
    "session.instructions.append",
    "session.thinking.append",
    "session.commentary.append",
    "session.update",
    "session.close",
    "response.item.create",  # a delegated task's function call outputs
    "response.create",
}


class Sideband:
    """One attached connection: an outbox of its own, fed by the session's."""

    def __init__(self, live: LiveSession) -> None:
        self.live = live
        self.outbox = Outbox(LIVE)

    def __enter__(self) -> Sideband:
        self.live.outbox.observers.append(self.outbox)
        return self

    def __exit__(self, *_: object) -> None:
        if self.outbox in self.live.outbox.observers:
            self.live.outbox.observers.remove(self.outbox)

    async def handle(self, raw: str | bytes, arrived_at: float) -> None:
        kind, event_id = _type(raw)
        if kind not in CONTROL:
            message = (
                f"{kind!r} is not a sideband command: a sideband sends "
                f"{', '.join(sorted(CONTROL))} (audio comes from the primary connection)"
            )
            error = ProtocolError("invalid_sideband_event", message, param="type")
            self.live.refuse(error, event_id)
            return
        await self.live.handle(raw, arrived_at)

    async def pump(self, send: Callable[[str], Awaitable[None]]) -> None:
        """The session's events to the sideband, until the session or sideband ends."""
        while (text := await self.outbox.get_text()) is not None:
            await send(text)


def _type(raw: str | bytes) -> tuple[str | None, str | None]:
    """The event's type and event_id (None where it has none, or is no JSON object)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    kind, event_id = data.get("type"), data.get("event_id")
    return (
        kind if isinstance(kind, str) else None,
        event_id if isinstance(event_id, str) else None,
    )
