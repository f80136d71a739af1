"""The server as the MCP client of a device (docs/mcp-protocol.md): JSON-RPC 2.0 inside
`{"type": "mcp", "payload": ...}` messages; the device's tools become function tools."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

MAX_PAGES = 20  # tools/list pages followed before the list is taken as it is
MAX_TOOLS = 64
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # a function tool's name (session_schema.Tool)


class McpError(RuntimeError):
    """A request the device answered with an error, answered wrongly, or not at all."""


class McpClient:
    def __init__(self, send: Callable[[dict[str, Any]], Awaitable[None]], timeout_s: float):
        """`send` puts one JSON-RPC payload on the device's socket."""
        self._send, self.timeout_s = send, timeout_s
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}

    def receive(self, payload: Any) -> str | None:
        """A payload from the device: answers its request. Returns why it is not JSON-RPC
        2.0, or None (a notification, or an answer nobody waits for any more, is fine)."""
        if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0":
            return 'an MCP payload must be a JSON-RPC 2.0 object ("jsonrpc": "2.0")'
        if "method" in payload:
            return None  # the device's notifications/... need no answer
        if "result" not in payload and "error" not in payload:
            return "a JSON-RPC answer needs a result or an error"
        future = self._waiting.pop(payload.get("id"), None)  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(payload)
        return None

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of `method`, or McpError (the device's error, or its silence)."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            await self._send(
                {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}
            )
            answer = await asyncio.wait_for(future, self.timeout_s)
        except TimeoutError:
            raise McpError(
                f"the device did not answer {method} within {self.timeout_s:g} s"
            ) from None
        finally:
            self._waiting.pop(request_id, None)
        error = answer.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            raise McpError(f"the device refused {method}: {message}")
        return answer["result"]

    async def tools(self) -> list[dict[str, Any]]:
        """`initialize`, then every page of `tools/list`: the device's tools as function tools."""
        await self.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
        found: list[dict[str, Any]] = []
        cursor = ""
        for _ in range(MAX_PAGES):
            result = await self.request("tools/list", {"cursor": cursor, "withUserTools": False})
            page = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise McpError("tools/list answered without a list of tools")
            found += [tool for tool in map(function_tool, page) if tool is not None]
            cursor = result.get("nextCursor") or ""
            if not cursor:
                break
        return found[:MAX_TOOLS]

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The text the device answers `tools/call` with (McpError for an error)."""
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        content = result.get("content") if isinstance(result, dict) else None
        texts = [c.get("text", "") for c in content or [] if isinstance(c, dict)]
        text = "\n".join(t for t in texts if isinstance(t, str))
        if isinstance(result, dict) and result.get("isError"):
            raise McpError(f"the device's {name} failed: {text or 'no reason given'}")
        return text or json.dumps(result)


def function_tool(tool: Any) -> dict[str, Any] | None:
    """An MCP tool as a Realtime function tool (None for one without a usable name)."""
    if not isinstance(tool, dict) or not NAME.match(str(tool.get("name", ""))):
        return None
    schema = tool.get("inputSchema")
    return {
        "type": "function",
        "name": tool["name"],
        "description": str(tool.get("description", ""))[:1024],
        "parameters": schema if isinstance(schema, dict) else {"type": "object", "properties": {}},
    }
