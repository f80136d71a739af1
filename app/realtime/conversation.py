"""The conversation of one session: ordered items, their text, truncation and deletion."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from app.llm import ChatMessage
from app.protocol.schemas import ProtocolError


@dataclass
class Item:
    """A user turn (typed or spoken) or an assistant answer."""

    id: str
    role: str
    text: str | None = None  # None until a spoken turn is transcribed
    audio: bool = False  # spoken (user) or spoken-aloud (assistant)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if self.text is not None:
            self.ready.set()


class Conversation:
    def __init__(self) -> None:
        self.items: list[Item] = []

    @property
    def last_id(self) -> str | None:
        return self.items[-1].id if self.items else None

    def add(self, item: Item, after: str | None = None) -> str | None:
        """Insert `item` after the item `after` (the end when None); returns its predecessor's id."""
        if after is None:
            previous = self.last_id
            self.items.append(item)
            return previous
        index = self._index(after, "previous_item_id")
        self.items.insert(index + 1, item)
        return after

    def get(self, item_id: str, param: str = "item_id") -> Item:
        return self.items[self._index(item_id, param)]

    def delete(self, item_id: str) -> None:
        del self.items[self._index(item_id, "item_id")]

    def delete_from(self, item: Item) -> list[Item]:
        """Remove `item` and everything after it; returns what was removed."""
        if item not in self.items:
            return []
        index = self.items.index(item)
        removed = self.items[index:]
        del self.items[index:]
        return removed

    def _index(self, item_id: str, param: str) -> int:
        for i, item in enumerate(self.items):
            if item.id == item_id:
                return i
        raise ProtocolError(
            "item_not_found", f"no conversation item with id '{item_id}'", param=param
        )

    async def history(self, instructions: str) -> list[ChatMessage]:
        """The chat so far, waiting for spoken turns still being transcribed."""
        messages = [ChatMessage("system", instructions)]
        for item in list(self.items):
            await item.ready.wait()
            if item.text:
                messages.append(ChatMessage(item.role, item.text))
        return messages
