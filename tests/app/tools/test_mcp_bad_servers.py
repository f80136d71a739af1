"""An MCP server failing in every way the issue names, through the Realtime WebSocket:
down, silent past the timeout, answering with a body that is no JSON-RPC, offering
10,000 tools, offering a tool whose schema is not JSON Schema, a tool slower than the
timeout. Each ends in a typed failure event within the timeout, never a hung response,
and the session answers the next question."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import down_url, mcp_server, not_json_rpc_server, silent_server
from tests.app.tools.test_mcp_realtime import Session, call, mcp_tool, types


def _bad(kind: str) -> AbstractContextManager[str]:
    if kind == "down":
        return nullcontext(down_url())
    if kind == "silent":
        return silent_server()
    if kind == "not_json_rpc":
        return not_json_rpc_server()
    return mcp_server(extra_tools=10_000)


@pytest.mark.parametrize("kind", ["down", "silent", "not_json_rpc", "10000_tools"])
def test_a_server_that_cannot_be_listed_fails_the_listing_and_the_session_goes_on(
    shared_components: Any, kind: str
) -> None:
    timeout_s = 10.0 if kind == "10000_tools" else 1.0
    with (
        _bad(kind) as url,
        Session(shared_components, [["Hello."]], "http://127.0.0.1:", timeout_s) as s,
    ):
        failed = s.tools([mcp_tool(url, require_approval="never")], "error")
        answer = s.ask("Hello?")
    assert types(failed)[-2:] == ["mcp_list_tools.failed", "error"]
    error = failed[-1]["error"]
    assert error["code"] == "mcp_list_tools_failed" and "'weather'" in error["message"]
    assert answer[-1]["response"]["status"] == "completed"
    assert "<tools>" not in s.llm.prompts[0][0].content
    assert invalid_events(s.seen) == []


@pytest.fixture(scope="module")
def bad_schema_url() -> Iterator[str]:
    with mcp_server(bad_schema=True) as url:
        yield url


def test_a_tool_with_an_invalid_schema_is_left_out_with_an_error(
    shared_components: Any, bad_schema_url: str
) -> None:
    with Session(shared_components, [["Hello."]], "http://127.0.0.1:") as s:
        listed = s.tools(
            [mcp_tool(bad_schema_url, require_approval="never")], "mcp_list_tools.completed"
        )
        s.until("conversation.item.done")
        s.ask("Hello?")
    error = next(e for e in listed if e["type"] == "error")["error"]
    assert error["code"] == "invalid_tool_schema" and "'broken_schema'" in error["message"]
    system = s.llm.prompts[0][0].content
    assert "get_weather" in system and "broken_schema" not in system


def test_a_tool_slower_than_the_timeout_is_a_failed_call(
    shared_components: Any, bad_schema_url: str
) -> None:
    scripts = [[call("get_forecast", city="Rome")], ["Sorry."], ["Hello."]]
    with Session(shared_components, scripts, "http://127.0.0.1:", timeout_s=0.5) as s:
        s.tools([mcp_tool(bad_schema_url, require_approval="never")], "conversation.item.done")
        answer = s.ask("Rain tomorrow in Rome?")
        after = s.ask("Hello?")
    assert "response.mcp_call.failed" in types(answer)
    item = next(
        e["item"]
        for e in answer
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "mcp_call"
    )
    assert item["error"]["type"] == "protocol_error" and "time" in item["error"]["message"]
    assert answer[-1]["response"]["status"] == "completed"
    assert after[-1]["response"]["status"] == "completed"
