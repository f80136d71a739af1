"""The MCP tools of one session: each `mcp` entry of its tools is listed once (the
`mcp_list_tools` item and its events), filtered by `allowed_tools`, offered to the model
with its JSON schema, and called through one reused connection per server.

A server that cannot be listed (not allowed, down, too slow, not speaking JSON-RPC, too
many tools) gives `mcp_list_tools.failed` and an `error` naming why; its tools are not
offered and the session goes on. A tool whose input schema is not valid JSON Schema is
left out with an `error` naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

from app.llm.tool_calls import ToolSpec
from app.protocol import events
from app.protocol.server_events import (
    Error,
    ItemCreated,
    ItemDone,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
)
from app.protocol.session_schema import McpApprovalFilter, McpTool, McpToolFilter
from app.realtime.conversation import Conversation
from app.realtime.handoff import EventSink
from app.tools.mcp_connection import ListedTool, McpConnection, McpFailure
from app.tools.mcp_items import McpApprovalRequestItem, McpListToolsItem
from app.tools.policy import McpPolicy, McpRefused


@dataclass(frozen=True)
class McpToolRef:
    """One tool offered to the model, and where it lives."""

    server: McpTool
    tool: ListedTool
    connection: McpConnection

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.tool.name, self.tool.description, self.tool.input_schema)

    def background_after_s(self, default: float | None) -> float | None:
        """How long a call may run before it goes on in the background (None: always wait)."""
        extensions = self.server.r1voice
        if extensions is None or extensions.background_after_s is None:
            return default
        return extensions.background_after_s or None

    @property
    def needs_approval(self) -> bool:
        rule = self.server.require_approval
        if rule is None or rule == "always":  # OpenAI's default is to ask
            return True
        if rule == "never":
            return False
        assert isinstance(rule, McpApprovalFilter)
        if rule.always is not None and _matches(rule.always, self.tool):
            return True
        return not (rule.never is not None and _matches(rule.never, self.tool))


def _matches(rule: McpToolFilter, tool: ListedTool) -> bool:
    named = rule.tool_names is None or tool.name in rule.tool_names
    read_only = (tool.annotations or {}).get("readOnlyHint")
    return named and (rule.read_only is None or bool(read_only) == rule.read_only)


def _allowed(server: McpTool, tool: ListedTool) -> bool:
    rule = server.allowed_tools
    if rule is None:
        return True
    if isinstance(rule, list):
        return tool.name in rule
    return _matches(rule, tool)


def _key(server: McpTool) -> tuple[Any, ...]:
    return (server.server_label, server.server_url, tuple(sorted((server.headers or {}).items())))


class McpToolset:
    def __init__(self, policy: McpPolicy, sink: EventSink, conversation: Conversation) -> None:
        self.policy, self.sink, self.conversation = policy, sink, conversation
        self._connections: dict[tuple[Any, ...], McpConnection] = {}
        self._listings: dict[tuple[Any, ...], asyncio.Task[list[McpToolRef]]] = {}
        # calls held for the client's approval, by their mcp_approval_request item's id
        self.pending: dict[str, tuple[McpApprovalRequestItem, McpToolRef]] = {}
        self._background: list[Callable[[], list[str]]] = []

    def hold(self, request: McpApprovalRequestItem, ref: McpToolRef) -> None:
        self.pending[request.id] = (request, ref)

    def running_later(self, cancel: Callable[[], list[str]]) -> None:
        """Calls went on in the background; `cancel()` stops those still running."""
        self._background.append(cancel)

    def cancel_background(self) -> list[str]:
        """Cancel every call still running in the background; the tools' names."""
        cancels, self._background = self._background, []
        return [name for cancel in cancels for name in cancel()]

    def prepare(self, servers: list[McpTool]) -> None:
        """Start listing each server not listed yet (its item joins the conversation now)."""
        for server in servers:
            key = _key(server)
            if key in self._listings:
                continue
            item = McpListToolsItem(
                id=events.new_id("item"),
                role="assistant",
                text="",
                server_label=server.server_label,
            )
            previous = self.conversation.add(item)
            self.sink(ItemCreated(previous_item_id=previous, item=item.to_wire()))
            self.sink(McpListToolsInProgress(item_id=item.id))
            self._listings[key] = asyncio.create_task(
                self._list(server, item), name=f"mcp-list-{server.server_label}"
            )

    async def tools(self, servers: list[McpTool]) -> list[McpToolRef]:
        """The tools `servers` offer (listing them first if need be); a failed server
        offers none."""
        self.prepare(servers)
        refs: list[McpToolRef] = []
        for server in servers:
            for ref in await asyncio.shield(self._listings[_key(server)]):
                if all(r.tool.name != ref.tool.name for r in refs):  # the first server's wins
                    refs.append(ref)
        return refs

    async def _list(self, server: McpTool, item: McpListToolsItem) -> list[McpToolRef]:
        try:
            connection = self._connection(server)
            listed = await connection.list_tools()
        except (McpRefused, McpFailure) as exc:
            refused = isinstance(exc, McpRefused)
            code = "mcp_server_not_allowed" if refused else "mcp_list_tools_failed"
            kind = "invalid_request_error" if refused else "server_error"
            self.sink(McpListToolsFailed(item_id=item.id))
            message = f"listing the tools of MCP server '{server.server_label}' failed: {exc}"
            self.sink(Error(code=code, message=message, param="tools", kind=kind))
            return []
        offered = [tool for tool in listed if _allowed(server, tool) and self._valid(server, tool)]
        item.tools = offered
        self.sink(McpListToolsCompleted(item_id=item.id))
        if item in self.conversation.items:
            self.sink(ItemDone(item=item.to_wire()))
        return [McpToolRef(server, tool, connection) for tool in offered]

    def _valid(self, server: McpTool, tool: ListedTool) -> bool:
        schema = tool.input_schema
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
            if schema.get("type", "object") != "object":
                raise jsonschema.SchemaError("a tool's input schema must be of type 'object'")
        except jsonschema.SchemaError as exc:
            message = (
                f"MCP server '{server.server_label}' offers tool '{tool.name}' with an input "
                f"schema that is not valid JSON Schema ({exc.message}); it is left out"
            )
            self.sink(Error(code="invalid_tool_schema", message=message, kind="server_error"))
            return False
        return True

    def _connection(self, server: McpTool) -> McpConnection:
        key = (server.server_url, tuple(sorted((server.headers or {}).items())))
        if key not in self._connections:
            self._connections[key] = McpConnection(server.server_url, server.headers, self.policy)
        return self._connections[key]

    async def close(self) -> None:
        for task in self._listings.values():
            task.cancel()
        for task in self._listings.values():
            with contextlib.suppress(BaseException):
                await task
        for connection in self._connections.values():
            await connection.close()
        self._connections.clear()
