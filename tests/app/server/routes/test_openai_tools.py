"""`tools` on /v1/chat/completions, read by the official openai SDK: the model's
`<tool_call>` becomes `tool_calls` (plain and streamed), finish_reason `tool_calls`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import openai
import pytest

from tests.conftest import client_with
from tests.fakes import ScriptedLLM

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CALL = ["<tool_", 'call>{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]


def sdk(components: Any, llm: ScriptedLLM) -> openai.OpenAI:
    http = client_with(dataclasses.replace(components, llm=llm))
    return openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http)


def test_tool_call_then_its_result(shared_components: Any) -> None:
    llm = ScriptedLLM([CALL, ["It is sunny."]])
    client = sdk(shared_components, llm)
    model = shared_components.settings.llm_model
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model=model, messages=question, tools=TOOLS)  # type: ignore[arg-type]
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert choice.message.content is None
    system = llm.prompts[0][0]
    assert system.role == "system" and "<tools>" in system.content
    follow_up = [
        *question,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    second = client.chat.completions.create(model=model, messages=follow_up, tools=TOOLS)  # type: ignore[arg-type]
    assert second.choices[0].message.content == "It is sunny."
    assert second.choices[0].finish_reason == "stop"
    roles = [m.role for m in llm.prompts[1]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert "<tool_call>" in llm.prompts[1][2].content and llm.prompts[1][3].content == "sunny"


def test_streamed_tool_call(shared_components: Any) -> None:
    client = sdk(shared_components, ScriptedLLM(["Sure. ", *CALL]))
    stream = client.chat.completions.create(
        model="r1voice",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=TOOLS,  # type: ignore[arg-type]
        stream=True,
    )
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert content == "Sure. "
    assert [(c.index, c.function.name) for c in calls] == [(0, "get_weather")]  # type: ignore[union-attr]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_without_tools_the_tags_are_plain_text(shared_components: Any) -> None:
    client = sdk(shared_components, ScriptedLLM(CALL))
    reply = client.chat.completions.create(
        model="r1voice", messages=[{"role": "user", "content": "x"}]
    )
    assert reply.choices[0].message.content == "".join(CALL)
    assert not reply.choices[0].message.tool_calls


def test_a_call_written_without_its_tags_is_a_call(shared_components: Any) -> None:
    # Qwen2.5 answers a tool question with the call's bare JSON at times: it was the
    # answer's text (and spoken, in a voice session)
    bare = ['{"name": "get_weather", "argu', 'ments": {"city": "Paris"}}']
    client = sdk(shared_components, ScriptedLLM([bare, ['{"name": "no_such_tool"}']]))
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="r1voice", messages=question, tools=TOOLS)  # type: ignore[arg-type]
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = first.choices[0].message.tool_calls or []
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert first.choices[0].message.content is None
    # a bare object that is no call of ours stays the text the model wrote, untagged
    second = client.chat.completions.create(model="r1voice", messages=question, tools=TOOLS)  # type: ignore[arg-type]
    assert second.choices[0].message.content == '{"name": "no_such_tool"}'
    assert not second.choices[0].message.tool_calls


@pytest.mark.parametrize(
    ("choice", "tools", "says"),
    [
        ("required", None, "offers none"),
        ({"type": "function", "function": {"name": "get_weather"}}, None, "offers none"),
        ({"type": "function", "function": {"name": "nope"}}, TOOLS, "'nope'"),
    ],
    ids=["required without tools", "named without tools", "named, not offered"],
)
def test_a_call_asked_of_tools_not_offered_is_refused(
    shared_components: Any, choice: Any, tools: Any, says: str
) -> None:
    client = sdk(shared_components, ScriptedLLM(["Hi."]))
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="r1voice",
            messages=[{"role": "user", "content": "x"}],
            tools=tools or openai.NOT_GIVEN,
            tool_choice=choice,
        )
    assert refused.value.status_code == 400 and says in str(refused.value)
