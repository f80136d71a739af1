"""MCP tools in the HTTP chat route (/v1/chat/completions): the request's `mcp` tools are
listed for it (one connection per server, closed with the request), offered beside its
functions, and a call the model writes of one of them is made by the server, its result
added to the messages and the answer generated again. The client sees the final answer
(and its own functions' calls, which stay its to make)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from app.llm import ChatMessage
from app.protocol.server_events import Error, ServerEvent
from app.protocol.session_schema import McpTool
from app.realtime.conversation import Conversation
from app.tools.acknowledgements import result_note
from app.tools.mcp_connection import McpFailure
from app.tools.mcp_items import call_record
from app.tools.mcp_toolset import McpToolRef, McpToolset
from app.tools.policy import McpPolicy

MAX_ROUNDS = 4  # answers of one request: each but the last may call MCP tools


class McpListingFailed(Exception):
    """A request's MCP server could not be used (`client_fault`: it named one not allowed)."""

    def __init__(self, code: str, message: str, client_fault: bool) -> None:
        super().__init__(message)
        self.code, self.client_fault = code, client_fault


async def request_tools(
    servers: list[McpTool], policy: McpPolicy
) -> tuple[McpToolset, list[McpToolRef]]:
    """The tools `servers` offer, or McpListingFailed naming the first that failed."""
    said: list[ServerEvent] = []
    toolset = McpToolset(policy, said.append, Conversation())
    refs = await toolset.tools(servers)
    errors = [e for e in said if isinstance(e, Error) and e.code != "invalid_tool_schema"]
    if errors:
        await toolset.close()
        first = errors[0]
        raise McpListingFailed(first.code, first.message, first.kind == "invalid_request_error")
    return toolset, refs


async def mcp_rounds(
    answer: Callable[[list[ChatMessage]], AsyncGenerator[Any, None]],
    messages: list[ChatMessage],
    refs: list[McpToolRef],
    toolset: McpToolset,
) -> AsyncGenerator[Any, None]:
    """`answer(messages)`'s pieces (("tool_call", entry JSON) among them, then its final
    delta), round after round while the model calls MCP tools; the final delta of a round
    that called them is not the end."""
    by_name = {ref.tool.name: ref for ref in refs}
    results: list[tuple[str, str]] = []
    try:
        for round_ in range(MAX_ROUNDS):
            made: list[tuple[McpToolRef, str]] = []
            last = round_ == MAX_ROUNDS - 1
            note = [ChatMessage("user", result_note(results))] if results else []
            async with contextlib.aclosing(answer([*messages, *note])) as pieces:
                async for piece in pieces:
                    if not last and isinstance(piece, tuple) and piece[0] == "tool_call":
                        function = json.loads(piece[1])["function"]
                        if function["name"] in by_name:
                            made.append((by_name[function["name"]], function["arguments"]))
                            continue
                    if made and not isinstance(piece, tuple):
                        break  # this round's end: the tools' results come next
                    yield piece
            if not made:
                return
            for ref, arguments in made:
                result = await _call(ref, arguments)
                results.append((ref.tool.name, result))
                record = call_record(ref.tool.name, arguments, result)
                messages = [*messages, ChatMessage("assistant", record)]
    finally:
        await toolset.close()


async def _call(ref: McpToolRef, arguments: str) -> str:
    try:
        timeout = ref.connection.policy.timeout_s
        return await ref.connection.call(ref.tool.name, json.loads(arguments), timeout)
    except McpFailure as exc:
        return f"The tool failed: {exc}"
