"""The conversation of one session: ordered items, their text, and the token budget.

A conversation grows without bound, the model's context does not. Before each answer
the history is fitted into a token budget: the oldest whole turns (a user item and what
follows it up to the next user item) are dropped first, `system` items and the
instructions never are, and the cut always falls on a turn boundary, so what is kept is
an unchanged suffix of the conversation and its prefix KV stays reusable from then on.
A history that outgrows its budget is cut down to `TRIM_LOW_WATER` of it at once, not
by one turn: the cut then stays where it is for the turns that fit again, so their
prompts share the prefix the engine has cached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.llm import ChatMessage
from app.protocol import events
from app.protocol.errors import ProtocolError
from app.speech.languages import language_name

# Chat-template tokens around each message (role header, end marker); a safe overestimate
# for the Llama/Qwen2/SmolLM2 templates, so an estimate that fits really fits.
MESSAGE_OVERHEAD_TOKENS = 8

# When the history outgrows its budget it is cut to this share of the budget, not just
# below it. Dropping only the oldest turn moved the start of the prompt on every later
# turn, so nothing after the instructions was ever a prefix-cache hit again and each
# turn prefilled the whole history (issue 29: ~34 s a turn at 7.5k tokens, against
# 2-8.6 s before the first trim). Half: each trim recomputes at most half a context,
# and then half a context of new turns reuses it; a higher mark keeps more of the
# conversation but trims (and recomputes) more often, w / (1 - w) prefilled tokens per
# new one. The same high/low watermark idea as a cache's eviction hysteresis.
TRIM_LOW_WATER = 0.5

TokenCounter = Callable[[list[str]], Awaitable[list[int]]]


@dataclass
class Item:
    """A user turn (typed or spoken), an assistant answer, or a client's system note."""

    id: str
    role: str
    text: str | None = None  # None until a spoken turn is transcribed
    audio: bool = False  # spoken (user) or spoken aloud (assistant)
    language: str | None = None  # a spoken user turn: the language it was heard in
    status: str = "completed"  # an answer: "in_progress" while generated, then "incomplete" if cut
    # "message", or a tool call ("function_call": role assistant, text = the call as the
    # model writes it) and its result ("function_call_output": role tool, text = output)
    kind: str = "message"
    call: tuple[str, str, str] | None = None  # function_call: (call_id, name, arguments)
    call_id: str | None = None  # function_call_output: the call it answers
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    _counted: tuple[str, int] | None = None  # (text, its tokens): recounted when text changes

    def __post_init__(self) -> None:
        if self.text is not None:
            self.ready.set()

    def messages(self) -> list[ChatMessage]:
        """What the item says in a prompt (an MCP call, app/tools, says its result too)."""
        return [ChatMessage(self.role, self.text or "")]

    def to_wire(self) -> dict[str, Any]:
        """The item as the protocol shows it (beta part names; the dialect renames)."""
        if self.kind == "function_call" and self.call is not None:
            return events.function_call_item(self.id, self.status, *self.call)
        if self.kind == "function_call_output":
            return events.function_call_output_item(self.id, self.call_id or "", self.text or "")
        if self.role == "assistant":
            content = [events.assistant_part(self.audio, self.text or "")]
        elif self.audio:
            content = [{"type": "input_audio", "transcript": self.text}]
        else:
            content = [{"type": "input_text", "text": self.text or ""}]
        return events.message_item(self.id, self.role, self.status, content)


@dataclass
class History:
    """What an answer is generated from, and the items dropped to make it fit."""

    messages: list[ChatMessage]
    dropped: list[Item]
    tokens: int  # the prompt's tokens (an overestimate by the template's overhead)
    language: str | None = None  # the language the last spoken user turn was heard in


@dataclass(frozen=True)
class ConversationLimits:
    """What a client may put in one conversation with conversation.item.create (spoken
    turns are bounded by the history's token budget, which drops the oldest)."""

    max_items: int = 1000
    max_item_chars: int = 100_000
    max_chars: int = 1_000_000


class Conversation:
    def __init__(self, limits: ConversationLimits | None = None) -> None:
        self.id = events.new_id("conv")
        self.items: list[Item] = []
        self.limits = limits or ConversationLimits()

    def check_room(self, chars: int) -> None:
        """Refuse a client item of `chars` characters that the limits have no room for."""
        limits = self.limits
        if chars > limits.max_item_chars:
            raise ProtocolError(
                "invalid_value",
                f"the item has {chars} characters; one item may have at most "
                f"{limits.max_item_chars} (R1VOICE_CONVERSATION_MAX_ITEM_CHARS)",
                param="item",
            )
        total = sum(len(item.text or "") for item in self.items)
        if len(self.items) >= limits.max_items or total + chars > limits.max_chars:
            raise ProtocolError(
                "conversation_full",
                f"the conversation holds {len(self.items)} items and {total} characters "
                f"(limits {limits.max_items} and {limits.max_chars}): delete items with "
                "conversation.item.delete or start a new session",
                param="item",
            )

    def heard_language(self) -> str | None:
        """The language the last spoken user turn was heard in (None: none was spoken)."""
        return next((i.language for i in reversed(self.items) if i.language), None)

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

    def replace(self, old: Item | None, new: Item) -> str | None:
        """Put `new` where `old` is (`old` leaves), or first when `old` is not here;
        returns the id of `new`'s predecessor."""
        index = next((i for i, item in enumerate(self.items) if item is old), None)
        if index is None:
            self.items.insert(0, new)
            return None
        self.items[index] = new
        return self.items[index - 1].id if index else None

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

    async def history(
        self,
        instructions: str,
        budget: int,
        count_tokens: TokenCounter,
        pending_user_text: str | None = None,
        expected_language: str | None = None,
        pending_language: str | None = None,
        note: str | None = None,
        low_water: float = TRIM_LOW_WATER,
        drop: bool = True,
    ) -> History:
        """The chat so far within `budget` tokens, waiting for turns still being transcribed.

        `pending_user_text` is a user turn not in the conversation yet (an early answer
        to a turn still being spoken). Dropped items are removed from the conversation.
        When the last spoken turn was heard in another language than `expected_language`
        (the session's; None: English, the instructions' own), the instructions say so;
        `pending_language` is the pending turn's. `note` (an idle nudge's, see
        responses/response.py) ends the prompt as a user message kept out of the
        conversation. `low_water`: the share of `budget` a history past it is cut to
        (1.0: just enough, the trim of before issue 29, which `bench engine` compares).
        `drop` False: a look ahead (a primed prompt's), the conversation keeps every item.
        """
        for item in list(self.items):
            await item.ready.wait()
        items = [item for item in self.items if item.text]
        heard = next((i.language for i in reversed(items) if i.role == "user"), None)
        if pending_user_text:  # the turn being answered is that one, not the last item
            heard = pending_language
        if heard is not None and heard != (expected_language or "en"):
            name = language_name(heard)
            instructions += f"\nThe user is speaking {name}: answer in {name}."
        await self._count(items, count_tokens)
        fixed = [instructions, *[text for text in (pending_user_text, note) if text]]
        fixed_tokens = sum(await count_tokens(fixed)) + MESSAGE_OVERHEAD_TOKENS * len(fixed)
        cut = _first_kept(
            items,
            budget - fixed_tokens,
            int(budget * low_water) - fixed_tokens,
            can_drop_all=bool(pending_user_text),
        )
        dropped = [item for item in items[:cut] if item.role != "system"]
        for item in dropped if drop else ():
            self.items.remove(item)
        kept = [item for item in items if item not in dropped]
        tokens = fixed_tokens + sum(_cost(item) for item in kept)
        messages = [ChatMessage("system", instructions)]
        messages += [message for item in kept for message in item.messages()]
        if pending_user_text:
            messages.append(ChatMessage("user", pending_user_text))
        if note:
            messages.append(ChatMessage("user", note))
        return History(messages, dropped, tokens, heard)

    @staticmethod
    async def _count(items: list[Item], count_tokens: TokenCounter) -> None:
        stale = [item for item in items if item._counted is None or item._counted[0] != item.text]
        if stale:
            counts = await count_tokens([item.text or "" for item in stale])
            for item, n in zip(stale, counts, strict=True):
                item._counted = (item.text or "", n)


async def item_tokens(item: Item, count_tokens: TokenCounter) -> int:
    """The tokens of `item`'s text, counted once per text: the history reuses the count."""
    await Conversation._count([item], count_tokens)
    return item._counted[1] if item._counted else 0


def _first_kept(items: list[Item], budget: int, low_water: int, can_drop_all: bool) -> int:
    """Index of the first item kept: 0 while everything fits `budget` (the cut of an
    earlier trim stays put), else the earliest turn boundary whose suffix fits
    `low_water`, or failing that `budget` (system items always count). The latest user
    turn is kept even when it alone does not fit (the backend then refuses it with a
    clear error), unless the user's turn is not among the items (`can_drop_all`: an
    early answer's pending text)."""

    system_cost = sum(_cost(item) for item in items if item.role == "system")
    boundaries = [i for i, item in enumerate(items) if item.role == "user"] or [0]
    if boundaries[0] != 0:
        boundaries.insert(0, 0)
    if can_drop_all:
        boundaries.append(len(items))
    kept_cost = {
        cut: system_cost + sum(_cost(item) for item in items[cut:] if item.role != "system")
        for cut in boundaries
    }
    if kept_cost[0] <= budget:
        return 0
    for limit in (low_water, budget):
        for cut in boundaries:
            if kept_cost[cut] <= limit:
                return cut
    return boundaries[-1]


def _cost(item: Item) -> int:
    return (item._counted[1] if item._counted else 0) + MESSAGE_OVERHEAD_TOKENS
