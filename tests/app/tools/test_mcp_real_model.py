"""A real model calls a real MCP server's tool through the Realtime WebSocket: Qwen2.5-
Coder-0.5B (the bundled model that calls tools best), the tool named in `tool_choice`,
a typed question answered in text. The call's arguments and the answer's words are the
model's: the test holds the server's part exact (the call made, its output read back in
the same response) and the model's loosely (a city named, an answer given)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.realtime.conftest import QWEN, with_qwen  # noqa: F401 - the fixture
from tests.app.tools.mcp_servers import mcp_server
from tests.app.tools.test_mcp_realtime import mcp_tool, send, types
from tests.conftest import client_with, receive_until, user_text_item


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def test_qwen_calls_the_tool_and_answers_from_its_result(
    with_qwen: Any,  # noqa: F811 - the fixture imported above
    weather_url: str,
) -> None:
    client = client_with(with_qwen, mcp_allowed_urls="http://127.0.0.1:")
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        tool = mcp_tool(weather_url, allowed_tools=["get_weather"], require_approval="never")
        session = {"type": "realtime", "model": QWEN, "tools": [tool]}
        send(ws, {"type": "session.update", "session": session})
        seen = receive_until(ws, lambda e: e["type"] == "mcp_list_tools.completed")
        item = user_text_item("What is the weather in Paris right now?")
        send(ws, {"type": "conversation.item.create", "item": item})
        choice = {"type": "function", "name": "get_weather"}
        response = {"output_modalities": ["text"], "tool_choice": choice, "max_output_tokens": 64}
        send(ws, {"type": "response.create", "response": response})
        answer = receive_until(ws, lambda e: e["type"] == "response.done")
    assert "response.mcp_call.completed" in types(answer), types(answer)
    call = next(o for o in answer[-1]["response"]["output"] if o["type"] == "mcp_call")
    city = json.loads(call["arguments"])["city"]
    assert "paris" in city.lower()
    assert call["output"] == f"Sunny and 21 degrees in {city}."
    said = "".join(e["delta"] for e in answer if e["type"] == "response.output_text.delta")
    assert said.strip()  # its words after the result (the model's: not held exact)
    assert answer[-1]["response"]["status"] == "completed"
    assert invalid_events(seen + answer) == []
