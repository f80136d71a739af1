"""Server events about the conversation's items: added, finished, deleted, read, cut."""

from __future__ import annotations

import dataclasses

from app.protocol.dialect import GA
from app.protocol.server_events.base import ItemEvent, ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemCreated(ItemEvent):
    """`item` joined the conversation after `previous_item_id`. GA says it as
    `conversation.item.added`, followed by `conversation.item.done` when the item is
    already finished (an item still being written gets its `.done` when it is: ItemDone)."""

    TYPE = "conversation.item.created"
    previous_item_id: str | None
    item: Wire

    def to_wire(self, dialect: str, event_id: str) -> list[Wire]:
        if dialect != GA:
            return super().to_wire(dialect, event_id)
        added = {"type": "conversation.item.added", **self.fields(dialect), "event_id": event_id}
        if added["item"].get("status") != "completed":
            return [added]
        return [added, {**added, "type": ItemDone.TYPE, "event_id": event_id + "_done"}]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemDone(ItemEvent):
    """GA only: an item that was added in progress (an answer, a function call) is
    finished."""

    TYPE = "conversation.item.done"
    GA_ONLY = True
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemDeleted(ServerEvent):
    """Item `item_id` left the conversation (the client deleted it, or the history
    dropped it to fit the model's context)."""

    TYPE = "conversation.item.deleted"
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemRetrieved(ItemEvent):
    """The reply to `conversation.item.retrieve`."""

    TYPE = "conversation.item.retrieved"
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemTruncated(ServerEvent):
    """The reply to `conversation.item.truncate`: the item keeps what was heard."""

    TYPE = "conversation.item.truncated"
    item_id: str
    content_index: int
    audio_end_ms: int
