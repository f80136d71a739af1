"""What every server event is: a frozen dataclass that knows its wire name and fields.

The inside of the server speaks these objects; the Outbox turns each into JSON in the
client's dialect, the only place that happens. An event's fields are its wire fields in
wire order, named as the protocol's beta names them (`wire()`); each dialect's module
(beta.py, ga.py) says the event as its clients read it, and wire.py picks the module.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, ClassVar

Wire = dict[str, Any]


class Omit(enum.Enum):
    """A field's value when the wire leaves the field out (not even null)."""

    OMIT = 0


OMIT = Omit.OMIT

# Every event class by its wire name; filled as the classes are defined.
EVENT_TYPES: dict[str, type[ServerEvent]] = {}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerEvent:
    """One event the server sends. Subclasses set `TYPE`, the wire name."""

    TYPE: ClassVar[str]
    EXTENSION: ClassVar[bool] = False  # ours (`r1voice.*`): only for clients that asked

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            EVENT_TYPES[cls.TYPE] = cls

    def fields(self) -> Wire:
        """The wire fields after `type`, in order (a field set to OMIT is left out)."""
        return {
            f.name: value
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not OMIT
        }

    def wire(self) -> Wire:
        """The event as the protocol's beta names it (a new dict; its values are shared)."""
        return {"type": self.TYPE, **self.fields()}

    # An event reads like that JSON (`event["type"]`, `"item" in event`, `event.get(...)`):
    # for tests and code that look at events by their wire fields.

    def __getitem__(self, key: str) -> Any:
        return self.wire()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.wire()

    def get(self, key: str, default: Any = None) -> Any:
        return self.wire().get(key, default)

    __iter__ = None  # not a sequence, though it has __getitem__
