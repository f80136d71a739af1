"""Server events of MCP tools (OpenAI Realtime's names and fields): listing a server's
tools (`mcp_list_tools.*`, for the `mcp_list_tools` item) and one call of a tool by a
response (`response.mcp_call_arguments.*`, `response.mcp_call.*`, for its `mcp_call`
item). The items themselves travel in the conversation and output-item events."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import ServerEvent


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpListToolsInProgress(ServerEvent):
    """The server is listing an MCP server's tools, for item `item_id`."""

    TYPE = "mcp_list_tools.in_progress"
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpListToolsCompleted(ServerEvent):
    """The tools are listed: item `item_id` holds them."""

    TYPE = "mcp_list_tools.completed"
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpListToolsFailed(ServerEvent):
    """The tools could not be listed (the `error` event that follows says why)."""

    TYPE = "mcp_list_tools.failed"
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpCallArgumentsDelta(ServerEvent):
    """An MCP call's arguments (all at once: a call is announced when whole)."""

    TYPE = "response.mcp_call_arguments.delta"
    response_id: str
    item_id: str
    output_index: int
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpCallArgumentsDone(ServerEvent):
    """An MCP call's `arguments` (JSON) are whole."""

    TYPE = "response.mcp_call_arguments.done"
    response_id: str
    item_id: str
    output_index: int
    arguments: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpCallInProgress(ServerEvent):
    """The server is calling the tool."""

    TYPE = "response.mcp_call.in_progress"
    item_id: str
    output_index: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpCallCompleted(ServerEvent):
    """The tool answered: the item's `output`."""

    TYPE = "response.mcp_call.completed"
    item_id: str
    output_index: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpCallFailed(ServerEvent):
    """The call failed: the item's `error` says how."""

    TYPE = "response.mcp_call.failed"
    item_id: str
    output_index: int
