"""stdio MCP servers: named by the operator in R1VOICE_MCP_STDIO_SERVERS, started by the
server for a session that names one (`server_url: "stdio:<label>"`), listed, called and
approved as an HTTP server's tools are, and stopped with the session. A client can never
make the server start a process: a label not in the setting is refused naming it."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.tools.policy import McpPolicy, McpRefused, parse_stdio_servers
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.test_mcp_realtime import Session, call, send, types
from tests.conftest import client_with
from tests.fakes import ScriptedLLM

SCRIPT = str(Path(__file__).with_name("stdio_weather.py"))
SERVERS = json.dumps({"weather": [sys.executable, SCRIPT]})


class StdioSession(Session):
    """A GA session whose server names the stdio weather server (and allows no URL)."""

    def __init__(self, components: Any, scripts: list[list[str]], servers: str = SERVERS):
        super().__init__(components, scripts, allowed="")
        parts = dataclasses.replace(components, llm=self.llm)
        self.client = client_with(
            parts, mcp_stdio_servers=servers, mcp_timeout_s=30.0, tools_background_after_s=0.0
        )


def stdio_tool(label: str = "weather", **fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": label, "server_url": f"stdio:{label}", **fields}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def children() -> set[int]:
    """The processes this test process started (Linux's /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def outputs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "mcp_call"
    ]


def test_a_stdio_server_is_started_listed_called_and_stopped_with_the_session(
    shared_components: Any,
) -> None:
    scripts = [
        [call("get_weather", city="Oslo")],
        ["It is cloudy in Oslo."],
        [call("server_pid")],
        ["Noted."],
    ]
    with StdioSession(shared_components, scripts) as s:
        listed = s.tools([stdio_tool(require_approval="never")], "conversation.item.done")
        answer = s.ask("What is the weather in Oslo?")
        pid = int(outputs(s.ask("Which process are you?"))[0]["output"])
        assert alive(pid)
    assert types(listed)[-4:] == [
        "conversation.item.added",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "conversation.item.done",
    ]
    assert listed[-1]["item"]["server_label"] == "weather"
    tools = [t["name"] for t in listed[-1]["item"]["tools"]]
    assert tools == ["get_weather", "get_alerts", "server_pid"]
    mcp = [e["type"] for e in answer if "mcp_call" in e["type"]]
    assert mcp == [
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
    ]
    item = outputs(answer)[0]
    assert item["output"] == "Cloudy and 12 degrees in Oslo." and item["error"] is None
    text = "".join(e["delta"] for e in answer if e["type"] == "response.output_text.delta")
    assert text == "Let me check. It is cloudy in Oslo."
    assert invalid_events(s.seen) == []
    deadline = time.monotonic() + 30  # the session's close stops the process
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"the stdio MCP server {pid} outlived its session"


def test_a_failing_tool_and_approval_work_as_over_http(shared_components: Any) -> None:
    scripts = [[call("get_alerts", city="Oslo")], ["Sorry."], [call("get_weather", city="Rome")]]
    scripts.append(["Cloudy in Rome."])
    with StdioSession(shared_components, scripts) as s:
        rule = {"never": {"tool_names": ["get_alerts"]}}
        s.tools([stdio_tool(require_approval=rule)], "conversation.item.done")
        failed = s.ask("Any alerts in Oslo?")
        asked = s.ask("And the weather in Rome?")
        request = asked[-1]["response"]["output"][1]
        approval = {"type": "mcp_approval_response", "approval_request_id": request["id"]}
        send(s.ws, {"type": "conversation.item.create", "item": {**approval, "approve": True}})
        send(s.ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        approved = s.until("response.done")
    assert "response.mcp_call.failed" in types(failed)
    error = outputs(failed)[0]["error"]
    assert error["type"] == "tool_execution_error" and "get_alerts" in error["message"]
    assert request["type"] == "mcp_approval_request" and request["name"] == "get_weather"
    call_item = outputs(approved)[0]
    assert call_item["approval_request_id"] == request["id"]
    assert call_item["output"] == "Cloudy and 12 degrees in Rome."
    assert approved[-1]["response"]["status"] == "completed"
    assert invalid_events(s.seen) == []


@pytest.mark.parametrize("label", ["nope", "python", "sh"])
def test_a_label_not_in_the_setting_is_refused_and_nothing_is_started(
    shared_components: Any, label: str
) -> None:
    before = children()
    with StdioSession(shared_components, [["Hello."]]) as s:
        failed = s.tools([stdio_tool(label)], "error")
        answer = s.ask("Hello?")
        started = children() - before
    assert "mcp_list_tools.failed" in types(failed)
    error = failed[-1]["error"]
    assert error["code"] == "mcp_server_not_allowed"
    assert "R1VOICE_MCP_STDIO_SERVERS" in error["message"] and repr(label) in error["message"]
    assert answer[-1]["response"]["status"] == "completed"
    assert started == set()


def test_a_command_is_never_taken_from_the_client() -> None:
    policy = McpPolicy(stdio_servers=parse_stdio_servers(SERVERS))
    assert policy.stdio_command("stdio:weather") == (sys.executable, SCRIPT)
    for url in ("stdio:python -c 1", "stdio:/bin/sh", "stdio:", "file:///bin/sh"):
        with pytest.raises(McpRefused):
            policy.check(url)
    with pytest.raises(McpRefused, match="R1VOICE_MCP_STDIO_SERVERS"):
        McpPolicy().check("stdio:weather")  # none named: none may be used


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("python server.py", "is not JSON"),
        ('["python"]', "must be a JSON object"),
        ('{"a b": ["python"]}', "the label 'a b'"),
        ('{"w": "python server.py"}', "a list of strings"),
        ('{"w": []}', "a list of strings"),
        ('{"w": ["python", 1]}', "a list of strings"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(value: str, says: str) -> None:
    with pytest.raises(ValueError, match="R1VOICE_MCP_STDIO_SERVERS") as refused:
        parse_stdio_servers(value)
    assert says in str(refused.value)
    assert parse_stdio_servers("  ") == ()


def test_the_chat_route_uses_a_stdio_server_and_stops_it_after_the_request(
    shared_components: Any,
) -> None:
    llm = ScriptedLLM([[call("server_pid")], ["Done."]])
    http = client_with(dataclasses.replace(shared_components, llm=llm), mcp_stdio_servers=SERVERS)
    body = {
        "model": shared_components.settings.llm_model,
        "messages": [{"role": "user", "content": "Which process?"}],
        "tools": [stdio_tool()],
    }
    reply = http.post("/v1/chat/completions", json=body)
    refused = http.post("/v1/chat/completions", json={**body, "tools": [stdio_tool("nope")]})
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == "Let me check. Done."
    record = llm.prompts[1][-2].content
    pid = int(record.split("It answered: ")[1].rstrip(")"))
    assert not alive(pid), f"the stdio MCP server {pid} outlived its request"
    assert refused.status_code == 400
    assert "R1VOICE_MCP_STDIO_SERVERS" in refused.json()["error"]["message"]
