"""Server events about the conversation's items: added, finished, deleted, read, cut."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemCreated(ServerEvent):
    """`item` joined the conversation after `previous_item_id` (GA says it as
    `conversation.item.added`, and `.done` at once for an item already finished)."""

    TYPE = "conversation.item.created"
    previous_item_id: str | None
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemDone(ServerEvent):
    """An item that was added in progress (an answer, a function call) is finished.
    GA's event only: a beta client does not get it."""

    TYPE = "conversation.item.done"
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemDeleted(ServerEvent):
    """Item `item_id` left the conversation (the client deleted it, or the history
    dropped it to fit the model's context)."""

    TYPE = "conversation.item.deleted"
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ItemRetrieved(ServerEvent):
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
