"""GPT-Live's server events (`/v1/live/sessions`), and the Live dialect that says them.

A Live session is the same realtime session as a Realtime one; app/live/ translates what
the session says into these events, and the Outbox turns them into JSON through
`to_wire` like every other dialect's. They keep a registry of their own (`LIVE_TYPES`):
several share a wire name with a Realtime event (`session.updated`, `error`) and mean
something else.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from app.protocol.server_events.base import OMIT, Omit, ServerEvent, Wire
from app.protocol.server_events.session import Error

LIVE = "live"  # the dialect's name (wire.py's DIALECTS)

LIVE_TYPES: dict[str, type[LiveEvent]] = {}


@dataclasses.dataclass(frozen=True, kw_only=True)
class LiveEvent(ServerEvent):
    """One Live server event; `client_event_id` echoes the client command it answers."""

    TYPE: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # object's, not ServerEvent's: Live events stay out of the Realtime registry
        super(ServerEvent, cls).__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            LIVE_TYPES[cls.TYPE] = cls

    def fields(self) -> Wire:
        wire = super().fields()
        if wire.get("client_event_id", OMIT) is None:
            del wire["client_event_id"]  # the SDK's types leave it out when not supplied
        return wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionStarted(LiveEvent):
    """The reply to `session.start`: the session resource, server defaults resolved."""

    TYPE = "session.started"
    session: Wire
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionUpdated(LiveEvent):
    """The reply to an accepted `session.update`: the whole resource as it now is."""

    TYPE = "session.updated"
    session: Wire
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionClosed(LiveEvent):
    """The last event: why (close_requested, expired, connection_lost), the final
    resource and the audio usage."""

    TYPE = "session.closed"
    reason: str
    session: Wire
    usage: Wire
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class UsageUpdated(LiveEvent):
    """Cumulative session seconds and the share of the model's context in use."""

    TYPE = "session.usage.updated"
    usage: Wire
    context_window: Wire | Omit = OMIT


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputAudioMuted(LiveEvent):
    TYPE = "session.input_audio.muted"
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputAudioUnmuted(LiveEvent):
    TYPE = "session.input_audio.unmuted"
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Appended(LiveEvent):
    """Context accepted onto the timeline (an append's acknowledgement: see subclasses)."""

    start_ms: int
    end_ms: int
    client_event_id: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class InstructionsAppended(Appended):
    TYPE = "session.instructions.appended"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ThinkingAppended(Appended):
    TYPE = "session.thinking.appended"


@dataclasses.dataclass(frozen=True, kw_only=True)
class CommentaryAppended(Appended):
    TYPE = "session.commentary.appended"


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputAudioDelta(LiveEvent):
    """Answer audio in the session's format (no timestamps on the primary WebSocket)."""

    TYPE = "session.output_audio.delta"
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputTranscriptDelta(LiveEvent):
    """Words of the user's audio, placed on the session's timeline."""

    TYPE = "session.input_transcript.delta"
    delta: str
    start_ms: int
    end_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputTranscriptDelta(LiveEvent):
    """Words of the assistant's audio, placed on the session's timeline."""

    TYPE = "session.output_transcript.delta"
    delta: str
    start_ms: int
    end_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class DelegationCreated(LiveEvent):
    """The live model handed a task to `target` (`client`: the application answers with
    thinking/commentary appends carrying `delegation_id`; `responses`: the server's
    backend works it, `response_id` naming the task's Responses stream, omitted for the
    client, as OpenAI's `Delegation` has it)."""

    TYPE = "session.delegation.created"
    delegation_id: str
    target: str
    offset_ms: int
    response_id: str | None = None

    def fields(self) -> Wire:
        delegation = {"id": self.delegation_id, "target": self.target, "type": "delegation"}
        if self.response_id is not None:
            delegation["response_id"] = self.response_id
        return {"delegation": delegation, "offset_ms": self.offset_ms}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponseEvent(LiveEvent):
    """One event of a delegated task's Responses stream (server delegation), nested as
    `event`; a function call the client must act on comes this way."""

    TYPE = "response.event"
    event: Wire
    delegation_id: str


def _error(event: Error, event_id: str) -> Wire:
    """A refusal as Live says it: `client_event_id` both on the event and in `error`."""
    error: Wire = {"type": event.kind, "code": event.code, "message": event.message}
    if event.param is not None:
        error["param"] = event.param
    wire: Wire = {"type": Error.TYPE, "event_id": event_id, "error": error}
    if event.client_event_id is not None:
        error["client_event_id"] = wire["client_event_id"] = event.client_event_id
    return wire


def to_wire(event: ServerEvent, event_id: str) -> list[Wire]:
    """Live events as they are; a refusal in Live's shape; a Realtime event has no Live
    form (app/live/ translates those before they get here)."""
    if isinstance(event, LiveEvent):
        return [{**event.wire(), "event_id": event_id}]
    if isinstance(event, Error):
        return [_error(event, event_id)]
    return []
