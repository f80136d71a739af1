"""The Live client events this server takes, parsed strictly (an unknown field is refused
by name); the ones it does not serve are refused saying so."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.live.config import refusal
from app.protocol.errors import ProtocolError


class LiveEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event_id: str | None = None


class Start(LiveEvent):
    type: Literal["session.start"]
    session: dict[str, Any]  # checked by config.parse_config, which names its fields


class ClientDelegationUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["client"]
    acknowledgement_delay_ms: int | None = Field(default=None, ge=0)


class ResponsesDelegationUpdate(BaseModel):
    """Sparse: the backend settings given replace those of the session, the rest stay."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["responses"]
    acknowledgement_delay_ms: int | None = Field(default=None, ge=0)
    responses: dict[str, Any] | None = None


class UpdateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delegation: (
        Annotated[ClientDelegationUpdate | ResponsesDelegationUpdate, Field(discriminator="type")]
        | None
    ) = None
    triggers: list[dict[str, Any]] | None = None


class Update(LiveEvent):
    type: Literal["session.update"]
    session: UpdateConfig


class AudioAppend(LiveEvent):
    type: Literal["session.input_audio.append"]
    audio: str


class Mute(LiveEvent):
    type: Literal["session.input_audio.mute"]


class Unmute(LiveEvent):
    type: Literal["session.input_audio.unmute"]


class Append(LiveEvent):
    """Instructions, thinking or commentary onto the timeline (see `kind`)."""

    type: Literal[
        "session.instructions.append", "session.thinking.append", "session.commentary.append"
    ]
    content: str = Field(min_length=1)
    delegation_id: str | None = None

    @property
    def kind(self) -> str:
        return self.type.split(".")[1]


class Close(LiveEvent):
    type: Literal["session.close"]


class ResponseItemCreate(LiveEvent):
    """A function call's output for the backend's delegated task (server delegation)."""

    type: Literal["response.item.create"]
    item: dict[str, Any]


class ResponseCreate(LiveEvent):
    """Go on with the delegated tasks whose function calls all have their outputs."""

    type: Literal["response.create"]


EVENTS: dict[str, type[LiveEvent]] = {
    "session.start": Start,
    "session.update": Update,
    "session.input_audio.append": AudioAppend,
    "session.input_audio.mute": Mute,
    "session.input_audio.unmute": Unmute,
    "session.instructions.append": Append,
    "session.thinking.append": Append,
    "session.commentary.append": Append,
    "session.close": Close,
    "response.item.create": ResponseItemCreate,
    "response.create": ResponseCreate,
}
NOT_SERVED = {
    "session.output_audio.fixture.play": "audio fixtures are not served here",
    "decision.create": "Decisions delegation is not served here",
    "decision.item.create": "Decisions delegation is not served here",
    "decision.item.delete": "Decisions delegation is not served here",
}


def parse(raw: str | bytes) -> LiveEvent:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ProtocolError(
            "invalid_json", "the message is not JSON: send one event object"
        ) from None
    if not isinstance(data, dict):
        raise ProtocolError("invalid_event", "an event is a JSON object with a 'type'")
    event_id = data.get("event_id") if isinstance(data.get("event_id"), str) else None
    kind = data.get("type")
    if not isinstance(kind, str):
        message = f"'type' must be a Live event's name (a string), not {kind!r}"
        raise ProtocolError("invalid_event", message, param="type", event_id=event_id)
    if kind in NOT_SERVED:
        message = f"'{kind}': {NOT_SERVED[kind]}"
        raise ProtocolError("unsupported_event", message, param="type", event_id=event_id)
    if kind not in EVENTS:
        raise ProtocolError(
            "unknown_event_type",
            f"unknown event type {kind!r}; Live events: {', '.join(EVENTS)}",
            param="type",
            event_id=event_id,
        )
    try:
        return EVENTS[kind].model_validate(data)
    except ValidationError as exc:
        raise refusal(exc, "", event_id) from None
