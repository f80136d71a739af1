"""Function calling over the Realtime WebSocket, with a scripted model writing
`<tool_call>` tags: the call becomes a function_call item (never spoken), its output
continues the turn, and a bad call is an `invalid_tool_call` error with its text kept."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from app.llm import ChatMessage
from app.protocol.server_events import (
    AudioTranscriptDelta,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    ResponseDone,
    SessionUpdated,
    TextDelta,
    ga,
)
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.conftest import client_with, receive_until, user_text_item
from tests.fakes import ScriptedLLM

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CALL = [
    "Checking. <tool",
    '_call>{"name": "get_weather", ',
    '"arguments": {"city": "Paris"}}</tool_',
    "call>",
]


def send(ws: Any, event: dict[str, Any]) -> None:
    ws.send_text(json.dumps(event))


def done(event: dict[str, Any]) -> bool:
    return event["type"] == ResponseDone.TYPE


def session_with(components: Any, llm: ScriptedLLM) -> Any:
    return client_with(dataclasses.replace(components, llm=llm))


def test_tool_call_round_trip(shared_components: Any) -> None:
    llm = ScriptedLLM([CALL, ["It is sunny in Paris."]])
    with session_with(shared_components, llm).websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        send(
            ws, {"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER_TOOL]}}
        )
        updated = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)[-1]
        assert updated["session"]["tools"][0]["name"] == "get_weather"
        send(ws, {"type": "conversation.item.create", "item": user_text_item("Weather in Paris?")})
        send(ws, {"type": "response.create", "response": {"output_modalities": ["audio"]}})
        first = receive_until(ws, done)
        args_done = next(e for e in first if e["type"] == FunctionCallArgumentsDone.TYPE)
        assert (args_done["name"], json.loads(args_done["arguments"])) == (
            "get_weather",
            {"city": "Paris"},
        )
        call_id = args_done["call_id"]
        send(
            ws,
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": '{"sky": "sunny"}',
                },
            },
        )
        send(ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        second = receive_until(ws, done)
    types = [e["type"] for e in first]
    assert types.index(FunctionCallArgumentsDelta.TYPE) < types.index(
        FunctionCallArgumentsDone.TYPE
    )
    spoken = "".join(e["delta"] for e in first if e["type"] == ga.RENAMED[AudioTranscriptDelta])
    assert spoken == "Checking. "  # the call itself is never spoken
    output = first[-1]["response"]["output"] if first[-1]["type"] == ResponseDone.TYPE else []
    assert [o["type"] for o in output] == ["message", "function_call"]
    assert output[1]["call_id"] == call_id and output[1]["status"] == "completed"
    system = llm.prompts[0][0].content
    assert "<tools>" in system and '"name": "get_weather"' in system
    assert [m.role for m in llm.prompts[1]] == ["system", "user", "assistant", "assistant", "tool"]
    assert llm.prompts[1][-1] == ChatMessage("tool", '{"sky": "sunny"}')
    assert (
        '"city": "Paris"' in llm.prompts[1][3].content
        and "<tool_call>" in llm.prompts[1][3].content
    )
    assert second[-1]["response"]["status"] == "completed"
    assert invalid_events(first + second) == []


def test_an_invalid_call_is_an_error_and_its_text_is_kept(shared_components: Any) -> None:
    llm = ScriptedLLM(['<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'])
    with session_with(shared_components, llm).websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        send(
            ws, {"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER_TOOL]}}
        )
        receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
        send(ws, {"type": "conversation.item.create", "item": user_text_item("Weather?")})
        send(ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        events = receive_until(ws, done)
    error = next(e for e in events if e["type"] == "error")["error"]
    assert (
        error["code"] == "invalid_tool_call" and "'city' is a required property" in error["message"]
    )
    text = "".join(e["delta"] for e in events if e["type"] == ga.RENAMED[TextDelta])
    assert text.startswith("<tool_call>")
    assert [o["type"] for o in events[-1]["response"]["output"]] == ["message"]


def test_tool_choice_none_offers_no_tools(shared_components: Any) -> None:
    llm = ScriptedLLM(["Fine."])
    with session_with(shared_components, llm).websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        session = {"type": "realtime", "tools": [WEATHER_TOOL], "tool_choice": "none"}
        send(ws, {"type": "session.update", "session": session})
        receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
        send(ws, {"type": "conversation.item.create", "item": user_text_item("Hi")})
        send(ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        receive_until(ws, done)
    assert "<tools>" not in llm.prompts[0][0].content
