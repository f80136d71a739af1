"""A weather MCP server over stdio, for the tests: the server starts it as
`python stdio_weather.py` when R1VOICE_MCP_STDIO_SERVERS names it. `server_pid` tells the
test which process to watch (it must be gone once the session is)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather-stdio")


@server.tool()
def get_weather(city: str) -> str:
    """The weather in a city, now."""
    return f"Cloudy and 12 degrees in {city}."


@server.tool()
def get_alerts(city: str) -> str:
    """Weather alerts for a city."""
    raise RuntimeError(f"the alerts service for {city} is down")


@server.tool()
def server_pid() -> str:
    """This server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
