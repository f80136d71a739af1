"""MCP tools on /v1/chat/completions, read by the official openai SDK: the server lists
the request's MCP server, calls the tool the model asks for and answers again with its
result, plain and streamed; the client's own functions still come back as tool_calls; a
server URL not allowed is a 400 naming the setting, a server down a 502."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from app.llm import ChatMessage
from tests.app.tools.mcp_servers import down_url, mcp_server
from tests.conftest import client_with
from tests.fakes import ScriptedLLM

QUESTION: Any = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def tagged(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def sdk(components: Any, llm: ScriptedLLM, allowed: str = "http://127.0.0.1:") -> openai.OpenAI:
    http = client_with(dataclasses.replace(components, llm=llm), mcp_allowed_urls=allowed)
    return openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http)


def mcp(url: str) -> Any:
    return {"type": "mcp", "server_label": "weather", "server_url": url}


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_calls_the_mcp_tool_and_answers_with_its_result(
    shared_components: Any, weather_url: str, stream: bool
) -> None:
    llm = ScriptedLLM([[tagged("get_weather", city="Paris")], ["It is sunny in Paris."]])
    client = sdk(shared_components, llm)
    model = shared_components.settings.llm_model
    tools: Any = [mcp(weather_url)]
    if stream:
        chunks: Any = list(
            client.chat.completions.create(model=model, messages=QUESTION, tools=tools, stream=True)
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    else:
        reply = client.chat.completions.create(model=model, messages=QUESTION, tools=tools)
        text, finish = reply.choices[0].message.content or "", reply.choices[0].finish_reason
        assert reply.choices[0].message.tool_calls is None
    assert (text, finish) == ("It is sunny in Paris.", "stop")
    assert '"name": "get_weather"' in llm.prompts[0][0].content
    record = (
        '(I called get_weather with {"city": "Paris"}. It answered: Sunny and 21 degrees in Paris.)'
    )
    assert llm.prompts[1][-2] == ChatMessage("assistant", record)
    assert "get_weather answered: Sunny" in llm.prompts[1][-1].content  # the note, last


def test_the_clients_own_functions_stay_its_to_call(
    shared_components: Any, weather_url: str
) -> None:
    function: Any = {
        "type": "function",
        "function": {"name": "play_music", "parameters": {"type": "object", "properties": {}}},
    }
    llm = ScriptedLLM([tagged("play_music")])
    client = sdk(shared_components, llm)
    model = shared_components.settings.llm_model
    reply = client.chat.completions.create(
        model=model,
        messages=QUESTION,
        tools=[mcp(weather_url), function],
    )
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.function.name == "play_music"  # type: ignore[union-attr]
    assert reply.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("allowed", "status", "code"),
    [
        ("https://tools.example.com/", 400, "mcp_server_not_allowed"),
        ("http://127.0.0.1:", 502, "mcp_list_tools_failed"),
    ],
)
def test_a_server_that_cannot_be_used_is_an_error_naming_why(
    shared_components: Any, allowed: str, status: int, code: str
) -> None:
    client = sdk(shared_components, ScriptedLLM(["Hi."]), allowed)
    model = shared_components.settings.llm_model
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model=model, messages=QUESTION, tools=[mcp(down_url())])
    assert caught.value.status_code == status
    body: Any = caught.value.body
    error = body.get("error", body) if isinstance(body, dict) else {}
    assert error["code"] == code
    if status == 400:
        assert "R1VOICE_MCP_ALLOWED_URLS" in error["message"]
