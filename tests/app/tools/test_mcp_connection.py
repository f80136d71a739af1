"""One session's connection to a real MCP server: its tools listed, calls answered or
failed with the error object OpenAI's mcp_call carries, and every way a server goes
wrong ending in an McpFailure within the timeout, never a hang."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from app.tools.mcp_connection import McpConnection, McpFailure
from app.tools.policy import McpPolicy, McpRefused
from tests.app.tools.mcp_servers import (
    down_url,
    mcp_server,
    not_json_rpc_server,
    silent_server,
)

POLICY = McpPolicy(allowed_urls=("http://127.0.0.1:",), timeout_s=1.0)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


async def _session(url: str, policy: McpPolicy = POLICY) -> tuple[list[str], list[Any]]:
    connection = McpConnection(url, {"X-Token": "t"}, policy)
    try:
        names = [t.name for t in await connection.list_tools()]
        outcomes: list[Any] = []
        for name, timeout in (("get_weather", 1.0), ("get_alerts", 1.0), ("get_forecast", 0.5)):
            try:
                outcomes.append(await connection.call(name, {"city": "Paris"}, timeout))
            except McpFailure as exc:
                outcomes.append(exc.error)
        outcomes.append(await connection.call("get_weather", {"city": "Oslo"}, 1.0))  # reused
        return names, outcomes
    finally:
        await connection.close()


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_tools_are_listed_and_called_over_one_connection(transport: str) -> None:
    with mcp_server(transport) as url:
        names, outcomes = run(_session(url))
    assert names == ["get_weather", "get_forecast", "get_alerts", "book_umbrella"]
    assert outcomes[0] == "Sunny and 21 degrees in Paris."
    assert outcomes[1]["type"] == "tool_execution_error"
    assert (
        outcomes[2]["type"] == "protocol_error" and "timed out" in outcomes[2]["message"]
    )  # the SDK's
    assert outcomes[3] == "Sunny and 21 degrees in Oslo."


def test_a_url_not_allowed_is_refused_naming_the_setting() -> None:
    with pytest.raises(McpRefused, match="R1VOICE_MCP_ALLOWED_URLS"):
        McpConnection("http://10.0.0.1/mcp", None, POLICY)
    with pytest.raises(McpRefused, match="allowed prefixes: none"):
        McpConnection("http://127.0.0.1:1/mcp", None, McpPolicy())
    with pytest.raises(McpRefused, match="http"):
        McpConnection("file:///etc/passwd", None, McpPolicy(allowed_urls=("file:",)))


def _bad(kind: str) -> AbstractContextManager[str]:
    if kind == "down":
        return nullcontext(down_url())
    if kind == "silent":
        return silent_server()
    if kind == "not_json_rpc":
        return not_json_rpc_server()
    return mcp_server(extra_tools=10_000)


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("down", "could not be reached"),
        ("silent", "did not answer in time"),
        ("not_json_rpc", ""),
        ("10000_tools", "more than 128 tools"),
    ],
)
def test_a_failing_server_fails_within_the_timeout(kind: str, says: str) -> None:
    timeout_s = 10.0 if kind == "10000_tools" else 1.0  # 10,000 tools take a while to send

    async def listing(url: str) -> dict[str, Any]:
        policy = McpPolicy(allowed_urls=POLICY.allowed_urls, timeout_s=timeout_s)
        connection = McpConnection(url, None, policy)
        try:
            await asyncio.wait_for(connection.list_tools(), 20)
        except McpFailure as exc:
            return exc.error
        finally:
            await connection.close()
        raise AssertionError("the listing did not fail")

    with _bad(kind) as url:
        error = run(listing(url))
    assert error["type"] in ("protocol_error", "http_error")
    assert says in error["message"]
