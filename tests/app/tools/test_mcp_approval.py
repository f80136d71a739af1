"""require_approval: a call of a tool that needs approval is an `mcp_approval_request`
item that ends the response; the client's `mcp_approval_response` item decides, and the
next response makes the call (its `mcp_call` names the request) or reads that it was
declined. `always`, `never` and per-tool filters pick which tools need it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from app.protocol.session_schema import McpTool
from app.tools.mcp_connection import ListedTool
from app.tools.mcp_toolset import McpToolRef
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import mcp_server
from tests.app.tools.test_mcp_realtime import Session, call, mcp_tool, send, types


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def needs(rule: Any, name: str, read_only: bool = False) -> bool:
    server = McpTool.model_validate(
        {"type": "mcp", "server_label": "w", "server_url": "http://x", "require_approval": rule}
    )
    tool = ListedTool(name, "", {"type": "object"}, {"readOnlyHint": read_only})
    return McpToolRef(server, tool, None).needs_approval  # type: ignore[arg-type]


def test_which_tools_need_approval() -> None:
    assert needs(None, "a") and needs("always", "a") and not needs("never", "a")
    per_tool = {"never": {"tool_names": ["get_weather"]}}
    assert not needs(per_tool, "get_weather") and needs(per_tool, "book_umbrella")
    assert needs({"always": {"tool_names": ["a"]}, "never": {"tool_names": ["a"]}}, "a")
    assert not needs({"never": {"read_only": True}}, "a", read_only=True)
    assert needs({"never": {"read_only": True}}, "a", read_only=False)


@pytest.mark.parametrize("approve", [True, False])
def test_a_call_waits_for_the_clients_approval(
    shared_components: Any, weather_url: str, approve: bool
) -> None:
    rule = {"never": {"tool_names": ["get_weather"]}}
    scripts = [[call("book_umbrella", city="Oslo")], ["Done."]]
    with Session(shared_components, scripts, "http://127.0.0.1:") as s:
        s.tools([mcp_tool(weather_url, require_approval=rule)], "conversation.item.done")
        asked = s.ask("Book me an umbrella in Oslo.")
        request = asked[-1]["response"]["output"][1]
        answer = {
            "type": "mcp_approval_response",
            "approval_request_id": request["id"],
            "approve": approve,
        }
        send(s.ws, {"type": "conversation.item.create", "item": answer})
        send(s.ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        after = s.until("response.done")
    assert request["type"] == "mcp_approval_request"
    assert (request["name"], json.loads(request["arguments"])) == (
        "book_umbrella",
        {"city": "Oslo"},
    )
    assert "response.mcp_call.in_progress" not in types(asked)  # nothing called yet
    assert len(s.llm.prompts) == 2  # the first response did not go on
    created = next(e for e in after if e["type"] == "conversation.item.added")
    assert created["item"]["type"] == "mcp_approval_response"
    mcp_done = [e for e in after if e["type"] == "response.output_item.done"]
    made = mcp_done[0]["item"]
    assert made["type"] == "mcp_call" and made["approval_request_id"] == request["id"]
    if approve:
        assert "response.mcp_call.completed" in types(after)
        assert made["output"] == "An umbrella is on its way to Oslo."
    else:
        assert "response.mcp_call.failed" in types(after)
        assert made["error"]["message"] == "the user declined the call"
    assert "It answered:" in s.llm.prompts[1][-2].content
    assert after[-1]["response"]["status"] == "completed"
    assert invalid_events(s.seen) == []
