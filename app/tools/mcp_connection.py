"""One session's connection to one MCP server, opened once and reused for every listing
and call (the `mcp` SDK's Client over streamable HTTP, SSE for a URL ending in `/sse`, or
stdio for `stdio:<label>`: the process the operator named is started for the session and
stopped when the connection closes).

The SDK's client lives in anyio task groups, which must be left by the task that entered
them: one owner task holds the connection open until `close()`, and the session's
requests go through it from any task. Every request has a deadline; whatever goes wrong
is an `McpFailure` carrying the error object OpenAI's `mcp_call` and listing report.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from app.tools.policy import STDIO, McpPolicy

# The SDK (and its HTTP client) is imported where a session first uses it, not when the
# server starts: importing it cost a cold start most of a second before the port answered.
if TYPE_CHECKING:
    from mcp import Client

_SDK: tuple[str, ...] = ("httpx2", "mcp", "mcp.types", "mcp.client.sse")
_SDK += ("mcp.client.streamable_http", "mcp.shared._httpx_utils", "app.tools.stdio_transport")
_sdk_imported = False


def _import_sdk() -> None:
    global _sdk_imported
    for name in _SDK:
        importlib.import_module(name)
    _sdk_imported = True


async def import_sdk() -> None:
    """The SDK's first import, on a worker thread: on the event loop, its most of a second
    would stall every other session's audio and turns. (Set once every import is done: a
    module half-imported by the thread would block the loop on its import lock.)"""
    if not _sdk_imported:
        await asyncio.to_thread(_import_sdk)


class McpFailure(Exception):
    """An MCP request failed; `error` is its wire form (`protocol_error`, `http_error` or
    `tool_execution_error`, as OpenAI's mcp_call item says it)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


def protocol_error(message: str, code: int = -32000) -> McpFailure:
    return McpFailure({"type": "protocol_error", "code": code, "message": message})


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def failure(exc: BaseException, url: str) -> McpFailure:
    """What `exc` (raised by the SDK or its HTTP client) tells the client."""
    import httpx2
    from mcp import MCPError

    exc = _leaf(exc)
    if isinstance(exc, McpFailure):
        return exc
    if isinstance(exc, httpx2.HTTPStatusError):
        code = exc.response.status_code
        message = f"the MCP server at {url} answered HTTP {code}"
        return McpFailure({"type": "http_error", "code": code, "message": message})
    if isinstance(exc, MCPError):
        return protocol_error(f"the MCP server at {url}: {exc}", exc.error.code)
    if isinstance(exc, TimeoutError):
        return protocol_error(f"the MCP server at {url} did not answer in time")
    if isinstance(exc, httpx2.HTTPError | OSError):
        return protocol_error(f"the MCP server at {url} could not be reached: {exc}")
    return protocol_error(f"the MCP server at {url} failed: {type(exc).__name__}: {exc}")


class McpConnection:
    def __init__(self, url: str, headers: dict[str, str] | None, policy: McpPolicy) -> None:
        policy.check(url)
        self.url, self.headers, self.policy = url, dict(headers or {}), policy
        self._client: Client | None = None
        self._ready: asyncio.Future[Client] | None = None
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    async def client(self) -> Client:
        """The open client, connecting the first time (within the policy's timeout)."""
        await import_sdk()
        if self._ready is None or (self._ready.done() and self._ready.exception()):
            self._closing = asyncio.Event()  # a failed connection is tried again
            self._ready = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._hold(self._ready), name=f"mcp {self.url}")
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), self.policy.timeout_s)
        except TimeoutError:
            await self.close()
            self._ready = None
            raise failure(TimeoutError(), self.url) from None

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        from mcp import Client

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                async with Client(transport, read_timeout_seconds=self.policy.timeout_s) as client:
                    ready.set_result(client)
                    await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(failure(exc, self.url))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        from app.tools.stdio_transport import stdio_transport

        if self.url.startswith(STDIO):  # the operator's command, never a client's
            return stdio_transport(self.policy.stdio_command(self.url))
        if urlparse(self.url).path.rstrip("/").endswith("/sse"):
            return sse_client(self.url, headers=self.headers, timeout=self.policy.timeout_s)
        timeout = httpx2.Timeout(self.policy.timeout_s)
        http = create_mcp_http_client(headers=self.headers, timeout=timeout)
        http = await stack.enter_async_context(http)
        return streamable_http_client(self.url, http_client=http)

    async def list_tools(self) -> list[ListedTool]:
        """All the server's tools (every page), refused past the policy's maximum."""
        tools: list[ListedTool] = []
        cursor: str | None = None
        try:
            client = await self.client()
            for _page in range(self.policy.max_pages):
                page = await asyncio.wait_for(
                    client.list_tools(cursor=cursor), self.policy.timeout_s
                )
                tools += [
                    ListedTool(
                        t.name,
                        t.description or "",
                        dict(t.input_schema or {}),
                        t.annotations.model_dump(exclude_none=True) if t.annotations else None,
                    )
                    for t in page.tools
                ]
                if len(tools) > self.policy.max_tools:
                    raise protocol_error(
                        f"the MCP server at {self.url} lists more than "
                        f"{self.policy.max_tools} tools; name the ones to offer in "
                        "allowed_tools of a server with fewer"
                    )
                cursor = page.next_cursor
                if cursor is None:
                    return tools
        except Exception as exc:
            raise failure(exc, self.url) from exc
        raise protocol_error(f"the MCP server at {self.url} lists tools without end")

    async def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> str:
        """The tool's output as text (its text contents joined, else its structured
        content's JSON); a tool that reports an error raises `tool_execution_error`."""
        try:
            client = await self.client()
            result = await asyncio.wait_for(
                client.call_tool(name, arguments, read_timeout_seconds=timeout_s),
                timeout_s + 1.0,  # the SDK's own deadline first: it tells the server
            )
        except Exception as exc:
            raise failure(exc, self.url) from exc
        from mcp.types import TextContent

        texts = [c.text for c in result.content if isinstance(c, TextContent)]
        output = "\n".join(texts)
        if not texts and result.structured_content is not None:
            output = json.dumps(result.structured_content)
        if result.is_error:
            raise McpFailure({"type": "tool_execution_error", "message": output or "failed"})
        return output

    async def close(self) -> None:
        self._closing.set()
        owner, self._owner = self._owner, None
        if owner is not None and not owner.done():
            wait_s = 4.0 if self.url.startswith(STDIO) else 2.0  # a stdio server's grace
            try:
                await asyncio.wait_for(asyncio.shield(owner), wait_s)
            except TimeoutError:
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
