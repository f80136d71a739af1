"""The tool-call parser on streamed chunks: split tags, malformed JSON, several calls."""

from __future__ import annotations

import json

import pytest

from app.llm.tool_calls import (
    InvalidToolCall,
    ToolCallSplitter,
    ToolSpec,
    call_text,
    parse_call,
    tools_prompt,
)

WEATHER = ToolSpec(
    "get_weather",
    "Weather in a city",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def split(text: str, step: int) -> list[tuple[str, str]]:
    splitter = ToolCallSplitter()
    out: list[tuple[str, str]] = []
    for i in range(0, len(text), step):
        out += splitter.push(text[i : i + step])
    out += splitter.flush()
    merged: list[tuple[str, str]] = []
    for kind, piece in out:  # adjacent content pieces are one text, however chunked
        if merged and kind == "content" == merged[-1][0]:
            merged[-1] = (kind, merged[-1][1] + piece)
        else:
            merged.append((kind, piece))
    return merged


TWO_CALLS = (
    'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    '</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call> Done.'
)


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_calls_come_out_whole_however_the_text_is_chunked(step: int) -> None:
    assert split(TWO_CALLS, step) == [
        ("content", "Let me check. "),
        ("call", '{"name": "get_weather", "arguments": {"city": "Paris"}}'),
        ("call", '{"name": "get_weather", "arguments": {"city": "Rome"}}'),
        ("content", " Done."),
    ]


BARE = ' {"name": "get_weather", "arguments": {"city": "Pa}\\"ris"}}\n<tool_call>{"name": "x"}</tool_call> ok'


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_an_answer_that_opens_with_a_calls_object_is_a_bare_call(step: int) -> None:
    # a brace or an escaped quote inside a string does not close the object
    assert split(BARE, step) == [
        ("bare_call", '{"name": "get_weather", "arguments": {"city": "Pa}\\"ris"}}'),
        ("content", "\n"),
        ("call", '{"name": "x"}'),
        ("content", " ok"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"city": "Paris"} is what I know',  # an object, but not a call's
        'Paris. {"name": "get_weather"}',  # a call's object, but not the answer's opening
        '{"name": "get_weather", "argu',  # unfinished: the text as written
        "{",
    ],
)
def test_what_is_not_an_opening_call_object_is_content(text: str) -> None:
    for step in (1, 4, 1000):
        assert split(text, step) == [("content", text)]


def test_a_lone_angle_bracket_is_content() -> None:
    assert split("a < b and <tool", 1) == [("content", "a < b and <tool")]


def test_an_unfinished_call_at_the_end_is_kept_as_text() -> None:
    assert split('Hi <tool_call>{"name": "get_w', 4) == [
        ("content", 'Hi <tool_call>{"name": "get_w'),
    ]


def test_parse_valid_call() -> None:
    call = parse_call('{"name": "get_weather", "arguments": {"city": "Paris"}}', [WEATHER])
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
    stringly = parse_call(
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}', [WEATHER]
    )
    assert json.loads(stringly.arguments) == {"city": "Oslo"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"name": "get_weather", "arguments": {"city": "Paris"', "not valid JSON"),
        ('["get_weather"]', 'string "name"'),
        ('{"name": "launch", "arguments": {}}', "'launch', which is not a tool"),
        ('{"name": "get_weather", "arguments": {}}', "'city' is a required property"),
        ('{"name": "get_weather", "arguments": {"city": 3}}', "3 is not of type 'string'"),
    ],
)
def test_bad_calls_say_what_is_wrong(raw: str, message: str) -> None:
    with pytest.raises(InvalidToolCall, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_call(raw, [WEATHER])


def test_history_form_round_trips() -> None:
    text = call_text("get_weather", '{"city": "Paris"}')
    ((kind, raw),) = split(text, 5)
    assert kind == "call" and parse_call(raw, [WEATHER]).arguments == '{"city": "Paris"}'


def test_prompt_lists_tools_and_choice() -> None:
    assert tools_prompt([WEATHER], "none") == "" and tools_prompt([], "auto") == ""
    prompt = tools_prompt([WEATHER], "required")
    assert '"name": "get_weather"' in prompt and prompt.endswith(
        "You must call one of these functions."
    )
    assert tools_prompt([WEATHER], "get_weather").endswith(
        "You must call the function get_weather."
    )
