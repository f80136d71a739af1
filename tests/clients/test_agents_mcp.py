"""OpenAI's Agents SDK (`openai-agents`) with MCP tools and r1voice: a RealtimeAgent
pointed at the server by URL, a real MCP server over streamable HTTP started by the test.

The SDK's RealtimeAgent takes function tools only (the SDK itself refuses a
`HostedMCPTool` when the session starts), so its session names the MCP server the way the
SDK leaves open, a raw `session.update` with Realtime's `mcp` entry: the server lists the
tools, makes the call and answers with its result, and every event it sends (the
mcp_list_tools and mcp_call items, the approval request) passes the SDK's own validation.
The SDK's own MCP client (`mcp_servers=`) works too: its tools reach us as functions."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agents import HostedMCPTool
from agents.exceptions import UserError
from agents.mcp import MCPServerStreamableHttp
from agents.realtime import RealtimeAgent
from agents.realtime.model_inputs import RealtimeModelSendRawMessage

from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import mcp_server
from tests.clients.conftest import ScriptedServer, serve
from tests.clients.test_agents_sdk import Recorder, agent_session, last_answer, run_async
from tests.conftest import app_with
from tests.fakes import ScriptedLLM

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


@contextmanager
def server_with_mcp(shared_components: Any, *answers: list[str]) -> Iterator[tuple[str, str]]:
    """r1voice (its LLM replaying `answers`) allowing loopback MCP servers, and the
    weather MCP server; yields (r1voice address, MCP URL)."""
    components = dataclasses.replace(shared_components, llm=ScriptedLLM(list(answers)))
    app = app_with(components, mcp_allowed_urls="http://127.0.0.1:", tools_background_after_s=0.0)
    with mcp_server() as url, serve(app) as address:
        yield address, url


async def name_mcp_server(recorder: Recorder, url: str, **fields: Any) -> None:
    tool = {"type": "mcp", "server_label": "weather", "server_url": url, **fields}
    update = {"session": {"type": "realtime", "tools": [tool]}}
    message = RealtimeModelSendRawMessage({"type": "session.update", "other_data": update})
    n = len(recorder.raw)
    await recorder.session.model.send_event(message)
    await recorder.wait_raw("mcp_list_tools.completed", after=n)


def agent() -> RealtimeAgent:
    return RealtimeAgent(name="Assistant", instructions="Use your tools.")


@pytest.mark.timeout(600)
@run_async
async def test_an_agents_session_uses_the_servers_mcp_tools(shared_components: Any) -> None:
    with server_with_mcp(shared_components, [CALL], ["It is sunny ", "in Paris."]) as (
        address,
        url,
    ):
        async with agent_session(address, agent()) as recorder:
            await name_mcp_server(recorder, url, require_approval="never")
            n = len(recorder.events)
            await recorder.session.send_message("What is the weather in Paris?")
            done = await recorder.wait_raw("response.done")
            await recorder.wait(lambda _: last_answer(recorder) == "It is sunny in Paris.", n)
    output = done["response"]["output"]
    assert [o["type"] for o in output] == ["message", "mcp_call"]
    assert output[1]["output"] == "Sunny and 21 degrees in Paris."
    kinds = [e["type"] for e in recorder.raw if e["type"].startswith("response.mcp_call")]
    assert kinds == [
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
    ]
    assert recorder.refused() == []
    assert recorder.errors() == []
    assert invalid_events(recorder.raw) == []


@pytest.mark.timeout(600)
@run_async
async def test_an_approval_request_reaches_the_agents_session_and_its_answer_the_call(
    shared_components: Any,
) -> None:
    answers = ([CALL], ["Sunny in Paris."])
    with server_with_mcp(shared_components, *answers) as (address, url):
        async with agent_session(address, agent()) as recorder:
            await name_mcp_server(recorder, url, require_approval="always")
            await recorder.session.send_message("What is the weather in Paris?")
            asked = await recorder.wait_raw("response.done")
            request = asked["response"]["output"][-1]
            approval = {  # the SDK's models need the item's id
                "id": "item_approval_1",
                "type": "mcp_approval_response",
                "approval_request_id": request["id"],
                "approve": True,
            }
            n = len(recorder.raw)
            create = {"type": "conversation.item.create", "other_data": {"item": approval}}
            await recorder.session.model.send_event(RealtimeModelSendRawMessage(create))  # type: ignore[arg-type]
            await recorder.session.model.send_event(
                RealtimeModelSendRawMessage({"type": "response.create"})
            )
            done = await recorder.wait_raw("response.done", after=n)
    assert request["type"] == "mcp_approval_request" and request["name"] == "get_weather"
    assert json.loads(request["arguments"]) == {"city": "Paris"}
    made = [o for o in done["response"]["output"] if o["type"] == "mcp_call"]
    assert made[0]["approval_request_id"] == request["id"]
    assert made[0]["output"] == "Sunny and 21 degrees in Paris."
    assert recorder.refused() == []
    assert recorder.errors() == []
    assert invalid_events(recorder.raw) == []


@pytest.mark.timeout(600)
@run_async
async def test_the_sdks_own_mcp_client_calls_the_tool_the_server_offered_as_a_function(
    shared_components: Any,
) -> None:
    """`mcp_servers=` on the agent: the SDK lists the MCP server's tools, the server offers
    them as functions, the SDK makes the call the model writes and sends its output."""
    with server_with_mcp(shared_components, [CALL], ["It is sunny ", "in Paris."]) as (
        address,
        url,
    ):
        weather = MCPServerStreamableHttp(params={"url": url}, cache_tools_list=True)
        await weather.connect()
        try:
            mcp_agent = RealtimeAgent(name="Assistant", mcp_servers=[weather])
            async with agent_session(address, mcp_agent) as recorder:
                await recorder.session.send_message("What is the weather in Paris?")
                end = await recorder.wait(lambda e: e.type == "tool_end")
                n = len(recorder.events)
                await recorder.wait(lambda _: last_answer(recorder) == "It is sunny in Paris.", n)
        finally:
            await weather.cleanup()
    assert end.tool.name == "get_weather"
    assert "Sunny and 21 degrees in Paris." in str(end.output)
    updated = [e for e in recorder.raw if e["type"] == "session.updated"][-1]
    offered = [t["name"] for t in updated["session"]["tools"]]
    assert offered == ["get_weather", "get_forecast", "get_alerts", "book_umbrella"]
    assert recorder.refused() == []
    assert recorder.errors() == []
    assert invalid_events(recorder.raw) == []


@pytest.mark.timeout(600)
@run_async
async def test_the_sdk_itself_refuses_a_hosted_mcp_tool_on_a_realtime_agent(
    scripted_server: ScriptedServer,
) -> None:
    """When the SDK starts passing `HostedMCPTool` on (the server takes its entry as it
    is), this fails: then test the SDK's own path here."""
    tool = HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "weather", "server_url": "http://x/mcp"}
    )
    hosted = RealtimeAgent(name="Assistant", tools=[tool])
    with scripted_server(["Hello."]) as address, pytest.raises(UserError, match="function tool"):
        async with agent_session(address, hosted):
            pass
