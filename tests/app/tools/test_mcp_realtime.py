"""MCP tools through the Realtime WebSocket, against a real MCP server over streamable
HTTP: the tools are listed when the session names the server, a call the model writes
is made by the server and its result read in the same response, with OpenAI's events in
order; a failing tool, arguments that fail the schema and a server that is refused each
end in a typed failure, and the session goes on. The model is scripted (tests/fakes.py):
what is tested is the server's part, not whether a small model calls a tool."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from app.llm import ChatMessage
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import mcp_server
from tests.conftest import client_with, receive_until, user_text_item
from tests.fakes import ScriptedLLM


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def call(name: str, **arguments: Any) -> str:
    return (
        f"Let me check. <tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
    )


def mcp_tool(url: str, **fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "weather", "server_url": url, **fields}


def send(ws: Any, event: dict[str, Any]) -> None:
    ws.send_text(json.dumps(event))


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


class Session:
    """A GA WebSocket session with a scripted LLM and MCP servers allowed on loopback."""

    def __init__(
        self,
        components: Any,
        scripts: list[list[str]],
        allowed: str,
        timeout_s: float = 5.0,
        background_after_s: float = 0.0,  # 0: every call is waited for
        llm: ScriptedLLM | None = None,  # one of its own, in place of `scripts`
    ) -> None:
        self.llm = llm or ScriptedLLM(scripts)
        parts = dataclasses.replace(components, llm=self.llm)
        self.client = client_with(
            parts,
            mcp_allowed_urls=allowed,
            mcp_timeout_s=timeout_s,
            tools_background_after_s=background_after_s,
        )
        self.seen: list[dict[str, Any]] = []

    def __enter__(self) -> Session:
        self._ctx = self.client.websocket_connect("/v1/realtime?dialect=ga")
        self.ws = self._ctx.__enter__()
        self.ws.receive_json()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)

    def until(self, kind: str) -> list[dict[str, Any]]:
        got = receive_until(self.ws, lambda e: e["type"] == kind)
        self.seen += got
        return got

    def tools(self, tools: list[dict[str, Any]], then: str) -> list[dict[str, Any]]:
        send(self.ws, {"type": "session.update", "session": {"type": "realtime", "tools": tools}})
        return self.until(then)

    def ask(self, text: str) -> list[dict[str, Any]]:
        send(self.ws, {"type": "conversation.item.create", "item": user_text_item(text)})
        send(self.ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        return self.until("response.done")


def test_a_tool_is_listed_called_and_its_result_answered_in_one_response(
    shared_components: Any, weather_url: str
) -> None:
    scripts = [[call("get_weather", city="Paris")], ["It is sunny in Paris."]]
    with Session(shared_components, scripts, "http://127.0.0.1:") as s:
        listed = s.tools(
            [mcp_tool(weather_url, require_approval="never")], "conversation.item.done"
        )
        answer = s.ask("What is the weather in Paris?")
    assert types(listed)[-4:] == [
        "conversation.item.added",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "conversation.item.done",
    ]
    tools = listed[-1]["item"]["tools"]
    assert [t["name"] for t in tools] == [
        "get_weather",
        "get_forecast",
        "get_alerts",
        "book_umbrella",
    ]
    assert tools[0]["input_schema"]["required"] == ["city"]
    mcp = [e for e in answer if "mcp" in e["type"] or e.get("item", {}).get("type") == "mcp_call"]
    assert types(mcp) == [
        "response.output_item.added",
        "conversation.item.added",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.output_item.done",
        "conversation.item.done",
    ]
    item = mcp[-1]["item"]
    assert (item["name"], json.loads(item["arguments"])) == ("get_weather", {"city": "Paris"})
    assert item["output"] == "Sunny and 21 degrees in Paris." and item["error"] is None
    text = "".join(e["delta"] for e in answer if e["type"] == "response.output_text.delta")
    assert text == "Let me check. It is sunny in Paris."
    done = answer[-1]["response"]
    assert done["status"] == "completed"
    assert [o["type"] for o in done["output"]] == ["message", "mcp_call"]
    system = s.llm.prompts[0][0].content
    assert '"name": "get_weather"' in system and '"city"' in system
    record = (
        '(I called get_weather with {"city": "Paris"}. It answered: Sunny and 21 degrees in Paris.)'
    )
    assert s.llm.prompts[1][-2] == ChatMessage("assistant", record)
    note = s.llm.prompts[1][-1]  # the result said last: small models answer from it
    assert note.role == "user" and "get_weather answered: Sunny and 21 degrees" in note.content
    assert invalid_events(s.seen) == []


def test_allowed_tools_filters_what_the_model_is_offered(
    shared_components: Any, weather_url: str
) -> None:
    with Session(shared_components, [["Fine."]], "http://127.0.0.1:") as s:
        tool = mcp_tool(weather_url, allowed_tools=["get_forecast"], require_approval="never")
        listed = s.tools([tool], "conversation.item.done")
        s.ask("Hi")
    assert [t["name"] for t in listed[-1]["item"]["tools"]] == ["get_forecast"]
    system = s.llm.prompts[0][0].content
    assert "get_forecast" in system and "get_weather" not in system


@pytest.mark.parametrize(
    ("script", "error_type", "says"),
    [
        (call("get_alerts", city="Oslo"), "tool_execution_error", "Error executing tool"),
        (call("get_weather", town="Oslo"), "protocol_error", "'city' is a required property"),
    ],
)
def test_a_failed_call_is_an_mcp_call_with_its_error_and_the_answer_goes_on(
    shared_components: Any, weather_url: str, script: str, error_type: str, says: str
) -> None:
    scripts = [[script], ["Sorry, I could not check."], ["Hello."]]
    with Session(shared_components, scripts, "http://127.0.0.1:") as s:
        s.tools([mcp_tool(weather_url, require_approval="never")], "conversation.item.done")
        answer = s.ask("Any alerts in Oslo?")
        after = s.ask("Hello?")
    assert "response.mcp_call.failed" in types(answer)
    item = next(
        e["item"]
        for e in answer
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "mcp_call"
    )
    assert item["output"] is None and item["error"]["type"] == error_type
    assert says in item["error"]["message"]
    assert "It answered: The tool failed:" in s.llm.prompts[1][-2].content
    assert answer[-1]["response"]["status"] == "completed"
    assert after[-1]["response"]["status"] == "completed"
    assert invalid_events(s.seen) == []


def test_a_server_url_not_allowed_is_refused_naming_the_setting(
    shared_components: Any, weather_url: str
) -> None:
    with Session(shared_components, [["Hello."]], "https://tools.example.com/") as s:
        failed = s.tools([mcp_tool(weather_url)], "error")
        answer = s.ask("Hello?")
    assert "mcp_list_tools.failed" in types(failed)
    error = failed[-1]["error"]
    assert error["code"] == "mcp_server_not_allowed"
    assert "R1VOICE_MCP_ALLOWED_URLS" in error["message"]
    assert answer[-1]["response"]["status"] == "completed"
    assert "<tools>" not in s.llm.prompts[0][0].content
