"""The conversation items of MCP tools, as OpenAI's Realtime shows them: the tools one
server offers (`mcp_list_tools`), one call of a tool with its output or error
(`mcp_call`), and a call held for the client's approval (`mcp_approval_request`).

In a prompt a call and its answer are one line of the assistant's (call_record); the
other two say nothing (the tools themselves go into the system prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.llm import ChatMessage
from app.realtime.conversation import Item
from app.tools.mcp_connection import ListedTool


def call_record(name: str, arguments: str, result: str) -> str:
    """A call and its result as the model reads them later: in words, not the
    `<tool_call>` and `<tool_response>` it was trained on, which the small models here
    copy back (they wrote the call's JSON again, and it was spoken)."""
    return f"(I called {name} with {arguments}. It answered: {result.strip()})"


@dataclass
class McpListToolsItem(Item):
    server_label: str = ""
    tools: list[ListedTool] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        tools = [
            {
                "name": t.name,
                "input_schema": t.input_schema,
                "description": t.description,
                "annotations": t.annotations,
            }
            for t in self.tools
        ]
        return {
            "type": "mcp_list_tools",
            "id": self.id,
            "server_label": self.server_label,
            "tools": tools,
        }


@dataclass
class McpCallItem(Item):
    server_label: str = ""
    name: str = ""
    arguments: str = "{}"
    output: str | None = None
    error: dict[str, Any] | None = None
    approval_request_id: str | None = None

    def finish(self, output: str | None, error: dict[str, Any] | None) -> None:
        self.output, self.error = output, error
        self.status = "completed" if error is None else "failed"
        self.text = call_record(self.name, self.arguments, self.result())

    def result(self) -> str:
        """What the model reads of the call's end."""
        if self.error is not None:
            return f"The tool failed: {self.error['message']}"
        return self.output if self.output is not None else "(the tool is still running)"

    def messages(self) -> list[ChatMessage]:
        return [ChatMessage("assistant", call_record(self.name, self.arguments, self.result()))]

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "mcp_call",
            "id": self.id,
            "server_label": self.server_label,
            "name": self.name,
            "arguments": self.arguments,
            "approval_request_id": self.approval_request_id,
            "output": self.output,
            "error": self.error,
        }


@dataclass
class McpApprovalRequestItem(Item):
    server_label: str = ""
    name: str = ""
    arguments: str = "{}"

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "mcp_approval_request",
            "id": self.id,
            "server_label": self.server_label,
            "name": self.name,
            "arguments": self.arguments,
        }


@dataclass
class McpApprovalResponseItem(Item):
    """The client's answer to an approval request: the call is made (or not) by the next
    response (app/realtime/responses/mcp_calls.py)."""

    approval_request_id: str = ""
    approve: bool = False
    reason: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "mcp_approval_response",
            "id": self.id,
            "approval_request_id": self.approval_request_id,
            "approve": self.approve,
            "reason": self.reason,
        }


def approval_response(
    item_id: str, request_id: str, approve: bool, reason: str | None
) -> McpApprovalResponseItem:
    return McpApprovalResponseItem(
        id=item_id,
        role="user",
        text="",
        approval_request_id=request_id,
        approve=approve,
        reason=reason,
    )
