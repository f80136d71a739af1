"""Real MCP servers for the tests, each served by uvicorn on a free loopback port: the
weather server (a fast tool, a slow one, a failing one, one with a bad schema), and the
ways a server goes wrong (down, silent, not speaking JSON-RPC, offering 10,000 tools)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

SLOW_S = 2.0  # the slow tool's latency


def weather_server(extra_tools: int = 0, bad_schema: bool = False) -> MCPServer:
    server = MCPServer("weather")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def get_weather(city: str) -> str:
        """The weather in a city, now."""
        return f"Sunny and 21 degrees in {city}."

    @server.tool()
    async def get_forecast(city: str) -> str:
        """Tomorrow's weather in a city (takes a while)."""
        await asyncio.sleep(SLOW_S)
        return f"Rain tomorrow in {city}."

    @server.tool()
    def get_alerts(city: str) -> str:
        """Weather alerts for a city."""
        raise RuntimeError(f"the alerts service for {city} is down")

    @server.tool()
    def book_umbrella(city: str) -> str:
        """Book an umbrella delivery in a city."""
        return f"An umbrella is on its way to {city}."

    tools = server._tool_manager._tools
    if extra_tools:
        server.add_tool(lambda: "ok", name="tool_0", description="A tool.")
        for n in range(1, extra_tools):  # copies: building 10,000 tools takes seconds
            tools[f"tool_{n}"] = tools["tool_0"].model_copy(update={"name": f"tool_{n}"})
    if bad_schema:
        server.add_tool(lambda: "ok", name="broken_schema", description="A bad schema.")
        tools["broken_schema"].parameters = {"type": "object", "properties": {"x": {"type": 12}}}
    return server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve an ASGI app on a free port; yields http://127.0.0.1:port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the test MCP server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def mcp_server(transport: str = "http", **options: Any) -> Iterator[str]:
    """A weather server; yields its MCP endpoint URL (`/mcp`, or `/sse` for SSE)."""
    server = weather_server(**options)
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    with serving(app) as base:
        yield f"{base}/sse" if transport == "sse" else f"{base}/mcp"


async def _not_json_rpc(scope: Any, receive: Any, send: Any) -> None:
    """Answers every request with JSON that is no JSON-RPC message."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    body = b'{"hello": "this is not JSON-RPC"}'
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def not_json_rpc_server() -> Iterator[str]:
    with serving(_not_json_rpc) as base:
        yield f"{base}/mcp"


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers (a server slow past any timeout)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        listener.close()


def down_url() -> str:
    """A URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}/mcp"
