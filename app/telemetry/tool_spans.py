"""`execute_tool {name}` spans (GenAI conventions) for a session's tool calls: a function
call runs from its arguments being whole to the client's `function_call_output` item; an
MCP call (the server calls it) from `in_progress` to `completed` / `failed`. Arguments and
results only when content is traced."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from app.protocol.server_events import (
    FunctionCallArgumentsDone,
    ItemCreated,
    ItemDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    OutputItemAdded,
    OutputItemDone,
    ServerEvent,
)

Parent = Callable[[str | None], Span]  # the span a response's tool calls go under


class ToolSpans:
    def __init__(self, tracer: Tracer, content: bool, parent: Parent) -> None:
        self.tracer, self.content, self.parent = tracer, content, parent
        self.open: dict[str, Span] = {}  # by call id (functions) or item id (MCP)
        self._mcp: dict[str, dict[str, Any]] = {}  # MCP call items announced, by item id

    def event(self, event: ServerEvent) -> None:
        if isinstance(event, FunctionCallArgumentsDone):
            self._start(event.call_id, event.name, "function", event.response_id, event.arguments)
        elif isinstance(event, OutputItemAdded) and event.item.get("type") == "mcp_call":
            self._mcp[str(event.item.get("id"))] = {**event.item, "response_id": event.response_id}
        elif isinstance(event, McpCallInProgress):
            item = self._mcp.get(event.item_id, {})
            name, arguments = str(item.get("name", "")), str(item.get("arguments", ""))
            started = self._start(
                event.item_id, name, "extension", item.get("response_id"), arguments
            )
            started.set_attribute("r1voice.mcp.server_label", str(item.get("server_label", "")))
        elif isinstance(event, McpCallCompleted | McpCallFailed):
            span = self.open.get(event.item_id)
            if span is not None and isinstance(event, McpCallFailed):
                span.set_status(Status(StatusCode.ERROR, "mcp_call.failed"))
            # its item (with the output) is emitted in the same step: end after it
            asyncio.get_running_loop().call_soon(self._end, event.item_id)
        elif isinstance(event, OutputItemDone | ItemDone) and event.item.get("type") == "mcp_call":
            span = self.open.get(str(event.item.get("id")))
            if span is not None and self.content:
                result = event.item.get("output") or event.item.get("error")
                span.set_attribute("gen_ai.tool.call.result", _text(result))
        elif isinstance(event, ItemCreated) and event.item.get("type") == "function_call_output":
            span = self.open.get(str(event.item.get("call_id")))
            if span is not None and self.content:
                span.set_attribute("gen_ai.tool.call.result", _text(event.item.get("output")))
            self._end(str(event.item.get("call_id")))

    def _start(
        self, key: str, name: str, kind: str, response_id: str | None, arguments: str
    ) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": key,
            "gen_ai.tool.type": kind,
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = arguments
        context = trace.set_span_in_context(self.parent(response_id))
        span = self.tracer.start_span(
            f"execute_tool {name}", context=context, attributes=attributes
        )
        self.open[key] = span
        return span

    def _end(self, key: str) -> None:
        span = self.open.pop(key, None)
        self._mcp.pop(key, None)
        if span is not None:
            span.end()

    def close(self) -> None:
        for key in list(self.open):
            self._end(key)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
