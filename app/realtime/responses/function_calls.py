"""The function calls one response makes: each becomes a `function_call` output item.

A call is whole when the model closes its `<tool_call>` tag; it is then validated
against the function's schema and announced as an output item with its arguments
(`response.function_call_arguments.delta`/`done`). It is never spoken. A call that does
not parse or match becomes an `invalid_tool_call` error, and its text stays in the
answer as ordinary words.
"""

from __future__ import annotations

from typing import Any

from app.llm.tool_calls import CLOSE, OPEN, InvalidToolCall, ToolSpec, call_text, parse_call
from app.protocol import events
from app.protocol.server_events import (
    Error,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    ItemCreated,
    ItemDone,
    OutputItemAdded,
    OutputItemDone,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink
from app.realtime.responses.mcp_calls import McpCalls


class FunctionCalls:
    def __init__(
        self,
        response_id: str,
        tools: tuple[ToolSpec, ...],
        conversation: Conversation | None,
        emit: EventSink,
    ) -> None:
        self.response_id = response_id
        self.tools = list(tools)
        self.conversation = conversation  # None: an out-of-band response
        self.emit = emit
        self.items: list[Item] = []
        self.mcp: McpCalls | None = None  # the MCP tools offered, once listed

    def add(self, raw: str, in_tags: bool = True) -> str | None:
        """One complete call's JSON (`in_tags`: written inside `<tool_call>` tags). Returns
        the text to keep as words, as the model wrote it, if it is invalid."""
        if self.mcp is not None and self.mcp.claims(raw):
            self.items.append(self.mcp.add(raw, 1 + len(self.items)))
            return None
        try:
            call = parse_call(raw, self.tools)
        except InvalidToolCall as exc:
            self.emit(Error(code="invalid_tool_call", message=str(exc), kind="server_error"))
            return f"{OPEN}{raw}{CLOSE}" if in_tags else raw
        index = 1 + len(self.items)  # output 0 is the message
        item = Item(
            id=events.new_id("item"),
            role="assistant",
            text=call_text(call.name, call.arguments),
            kind="function_call",
            call=(events.new_id("call"), call.name, call.arguments),
        )
        self.items.append(item)
        call_id, name, arguments = item.call  # type: ignore[misc]
        rid = self.response_id
        added = events.function_call_item(item.id, "in_progress", call_id, name, "")
        self.emit(OutputItemAdded(response_id=rid, output_index=index, item=added))
        if self.conversation is not None:
            previous = self.conversation.last_id
            self.conversation.add(item)
            self.emit(ItemCreated(previous_item_id=previous, item=added))
        at = {"call_id": call_id, "response_id": rid, "item_id": item.id}
        self.emit(FunctionCallArgumentsDelta(**at, delta=arguments, output_index=index))
        self.emit(
            FunctionCallArgumentsDone(**at, name=name, arguments=arguments, output_index=index)
        )
        self.emit(OutputItemDone(response_id=rid, output_index=index, item=item.to_wire()))
        if self.conversation is not None:
            self.emit(ItemDone(item=item.to_wire()))
        return None

    def wire_items(self) -> list[dict[str, Any]]:
        return [item.to_wire() for item in self.items]
