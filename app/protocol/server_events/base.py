"""What every server event is: a frozen dataclass that knows its wire name and shape.

The inside of the server speaks these objects; the Outbox turns each into JSON in the
client's dialect, the only place that happens. An event's fields are its wire fields in
wire order (beta names); `to_wire` says them in GA or beta. GA renames some events and
some content part types, says `conversation.item.created` as `.added` (and `.done` for a
finished item), and has events beta lacks (`GA_ONLY`).
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any, ClassVar

from app.protocol.dialect import BETA, GA

Wire = dict[str, Any]

_PART_TYPES = {"audio": "output_audio", "text": "output_text"}


class Omit(enum.Enum):
    """A field's value when the wire leaves the field out (not even null)."""

    OMIT = 0


OMIT = Omit.OMIT

# Every event class by its (beta) wire name; filled as the classes are defined.
EVENT_TYPES: dict[str, type[ServerEvent]] = {}


def ga_item(item: Wire) -> Wire:
    """An item as GA shows it: an assistant's content parts are `output_audio` and
    `output_text` (beta's `audio`, `text`). A copy: the event keeps its own."""
    item = copy.deepcopy(item)
    if item.get("role") == "assistant":
        for part in item.get("content", []):
            part["type"] = _PART_TYPES.get(part["type"], part["type"])
    return item


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerEvent:
    """One event the server sends. Subclasses set `TYPE` (the beta wire name)."""

    TYPE: ClassVar[str]
    GA_TYPE: ClassVar[str | None] = None  # GA's name, where it differs
    GA_ONLY: ClassVar[bool] = False  # beta has no such event: a beta client does not get it
    EXTENSION: ClassVar[bool] = False  # ours (`r1voice.*`): only for clients that asked

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            EVENT_TYPES[cls.TYPE] = cls

    def fields(self, dialect: str) -> Wire:
        """The wire fields after `type`, in order (a field set to OMIT is left out)."""
        return {
            f.name: value
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not OMIT
        }

    def to_wire(self, dialect: str, event_id: str) -> list[Wire]:
        """What a client of `dialect` receives for this event: none, one or more events."""
        if self.GA_ONLY and dialect != GA:
            return []
        name = self.GA_TYPE if dialect == GA and self.GA_TYPE else self.TYPE
        return [{"type": name, **self.fields(dialect), "event_id": event_id}]

    # An event reads like the JSON a beta client gets (`event["type"]`, `"item" in event`,
    # `event.get("error")`): for tests and code that still look at events by wire name.

    def wire_fields(self) -> Wire:
        return {"type": self.TYPE, **self.fields(BETA)}

    def __getitem__(self, key: str) -> Any:
        return self.wire_fields()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.wire_fields()

    def get(self, key: str, default: Any = None) -> Any:
        return self.wire_fields().get(key, default)

    __iter__ = None  # not a sequence, though it has __getitem__


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemEvent(ServerEvent):
    """An event whose `item` field (each subclass places it) is a conversation item: its
    assistant parts are renamed for GA."""

    def fields(self, dialect: str) -> Wire:
        wire = super().fields(dialect)
        if dialect == GA:
            wire["item"] = ga_item(wire["item"])
        return wire
