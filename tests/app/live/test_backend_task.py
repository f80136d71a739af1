"""Server delegation with the session's function tools: a real backend model (Qwen2.5
0.5B) works the delegated task, calls the client's function; the call comes to the client
as a `response.event`, its output (`response.item.create`, then `response.create`) flows
back to the task, and the conclusion built on it is what the live model is told to say.
Outputs for calls nobody waits on, and backend commands in a session that does not
delegate to the server, are refused by name and the session goes on."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from app.catalog import registry
from app.llm.catalog import LLMCatalog
from tests.app.live.conftest import LiveClient, live_connection
from tests.clients.conftest import serve
from tests.conftest import app_with
from tests.fakes import ScriptedLLM

pytestmark = pytest.mark.timeout(900)

QWEN = "qwen2.5-coder-0.5b-instruct"
DELEGATE = [
    '<tool_call>{"name": "delegate", "arguments": {"task": "What is the weather in Paris '
    'right now?"}}</tool_call>'
]
WAIT = ["Let me check ", "that."]
ANSWER = ["It is warm ", "in Paris."]
ASKED = [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}]
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
OUTPUT = '{"city": "Paris", "temperature_c": 31, "sky": "sunny"}'


def nested(client: LiveClient, kind: str) -> list[dict[str, Any]]:
    return [e["event"] for e in client.of("response.event") if e["event"]["type"] == kind]


def test_the_backend_calls_the_clients_function_and_concludes_from_its_output(
    shared_components: Any,
) -> None:
    if QWEN not in [row.name for row in registry.list_models() if row.state == "ready"]:
        pytest.skip(f"{QWEN} is not prepared (r1voice models prepare {QWEN})")
    live = ScriptedLLM([DELEGATE, WAIT, ANSWER])
    llms = LLMCatalog.from_settings(live, shared_components.settings)  # loads Qwen for real
    components = dataclasses.replace(shared_components, llm=live, llms=llms)
    responses = {"model": QWEN, "tools": [WEATHER], "tool_choice": "required"}
    responses["instructions"] = (  # the application's backend prompt, as OpenAI's guide has it
        "You find the weather for a voice assistant. Call get_weather for the city asked "
        "about, then say the weather there in one short sentence."
    )
    delegation = {"type": "responses", "responses": {**responses, "max_output_tokens": 64}}

    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            await client.start(input=ASKED, delegation=delegation)
            created = await client.wait("session.delegation.created")
            await client.wait(
                "response.event",
                match=lambda e: e["event"]["type"] == "response.completed",
            )
            (call,) = nested(client, "response.output_item.done")
            assert call["item"]["type"] == "function_call"
            # nothing waits on this call id; no task has all its outputs yet
            wrong = {"type": "function_call_output", "call_id": "call_nope", "output": "{}"}
            await client.send({"type": "response.item.create", "item": wrong, "event_id": "w1"})
            await client.send({"type": "response.create", "event_id": "w2"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "w2")
            output = {**wrong, "call_id": call["item"]["call_id"], "output": OUTPUT}
            await client.send({"type": "response.item.create", "item": output, "event_id": "o1"})
            await client.send({"type": "response.create", "event_id": "o2"})
            await client.wait(
                "response.event",
                match=lambda e: (
                    e["event"]["type"] == "response.output_item.done"
                    and e["event"]["item"]["type"] == "message"
                ),
            )
            await client.wait(  # the conclusion, said as the backend wrote it
                "session.output_transcript.delta",
                match=lambda e: "31" in e["delta"] or "thirty" in e["delta"].lower(),
            )
            assert all(
                e["delegation_id"] == created["delegation"]["id"]
                for e in client.of("response.event")
            )
            await client.send({"type": "session.close"})
            await client.closed()
            return client

    try:
        with serve(app_with(components)) as address:
            client = asyncio.run(main(address))
    finally:
        asyncio.run(llms.close())
    kinds = [e["event"]["type"] for e in client.of("response.event")]
    deltas = kinds.count("response.output_text.delta")
    assert kinds == [
        "response.created",
        "response.output_item.done",  # the function call
        "response.completed",
        "response.created",
        *["response.output_text.delta"] * deltas,
        "response.output_item.done",  # the conclusion
        "response.completed",
    ]
    # the first run is the response session.delegation.created named; the run after the
    # tool outputs is a response of its own
    first, then = (e["response"]["id"] for e in nested(client, "response.created"))
    assert first == client.of("session.delegation.created")[0]["delegation"]["response_id"]
    assert then != first
    call = nested(client, "response.output_item.done")[0]["item"]
    assert call["name"] == "get_weather"
    assert "paris" in call["arguments"].lower()
    conclusion = nested(client, "response.output_item.done")[1]["item"]["content"][0]["text"]
    assert "31" in conclusion or "thirty-one" in conclusion.lower(), conclusion
    errors = {e["client_event_id"]: e["error"] for e in client.of("error")}
    assert (errors["w1"]["code"], errors["w1"]["param"]) == ("call_not_found", "item.call_id")
    assert errors["w2"]["code"] == "no_response_waiting"
    assert set(errors) == {"w1", "w2"}  # the real output and its response.create were taken
    # the conclusion is said as it is (the backend's JSON and tool calls are not)
    said = client.said()
    assert said.startswith("".join(WAIT)), said
    assert said.replace(" ", "").endswith(conclusion.replace(" ", "").strip()), said
    assert "get_weather" not in said and "{" not in said
    assert client.types()[-1] == "session.closed"


def test_backend_commands_need_server_delegation(scripted_live: Any) -> None:
    async def main(address: str) -> tuple[LiveClient, dict[str, Any]]:
        async with live_connection(address) as client:
            await client.start(delegation={"type": "client"})
            await client.send({"type": "response.create", "event_id": "r1"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "r1")
            await client.send({"type": "session.instructions.append", "content": "Be brief."})
            await client.wait("session.instructions.appended")  # the session went on
            tools = {"model": QWEN, "tools": [{"type": "web_search"}]}
            bad = {"delegation": {"type": "responses", "responses": tools}}
            return client, bad

    with scripted_live(["Hi."]) as address:
        client, bad = asyncio.run(main(address))
        refused = asyncio.run(_start_refused(address, bad))
    (error,) = client.of("error")
    assert (error["error"]["code"], error["error"]["param"]) == ("invalid_request", "type")
    assert "responses" in error["error"]["message"]
    assert refused["code"] == "unsupported_tool"
    assert refused["param"] == "session.delegation.responses.tools[0].type"


async def _start_refused(address: str, session: dict[str, Any]) -> dict[str, Any]:
    async with live_connection(address) as client:
        await client.send({"type": "session.start", "session": {"model": "gpt-live-1", **session}})
        return (await client.wait("error"))["error"]  # type: ignore[no-any-return]
