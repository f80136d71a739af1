"""Function calling for models that write `<tool_call>{json}</tool_call>`.

Qwen2.5 / R1-Distill and SmolLM2 were trained on the Hermes-style tool format: the tools
are listed in the system prompt inside `<tools></tools>` and the model answers a call as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`. We render that section
ourselves (so it works whatever the chat template does with `tools`) and parse calls out
of the stream, as vLLM's hermes tool parser does: text outside the tags is the answer,
each complete tag is one call, validated against its function's JSON schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jsonschema

OPEN, CLOSE = "<tool_call>", "</tool_call>"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None  # a JSON schema (type "object")


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the protocols carry it


class InvalidToolCall(ValueError):
    """The model wrote a call that does not parse or does not match its function."""


def tools_prompt(tools: list[ToolSpec], choice: str | None) -> str:
    """The system-prompt section that offers `tools` ("" when none may be called).

    `choice`: "auto" (default), "none", "required", or a function name that must be called.
    """
    if not tools or choice == "none":
        return ""
    listed = "\n".join(
        json.dumps(
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters or {"type": "object", "properties": {}},
                },
            }
        )
        for t in tools
    )
    must = {None: "", "auto": "", "required": "\nYou must call one of these functions."}.get(
        choice, f"\nYou must call the function {choice}."
    )
    return (
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        f"{listed}\n</tools>\n\nFor each function call, return a json object with function name "
        "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' + must
    )


def call_text(name: str, arguments: str) -> str:
    """A call as the model writes it (how a past call appears in the history)."""
    return f'{OPEN}\n{{"name": {json.dumps(name)}, "arguments": {arguments or "{}"}}}\n{CLOSE}'


def parse_call(raw: str, tools: list[ToolSpec]) -> ToolCall:
    """The JSON between the tags -> a call of one of `tools`, or InvalidToolCall."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidToolCall(f"the tool call is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise InvalidToolCall('a tool call must be an object with a string "name"')
    spec = next((t for t in tools if t.name == data["name"]), None)
    if spec is None:
        names = [t.name for t in tools]
        raise InvalidToolCall(
            f"the model called '{data['name']}', which is not a tool; tools: {names}"
        )
    arguments = data.get("arguments", {})
    if isinstance(arguments, str):  # some models write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidToolCall(f"the arguments of '{spec.name}' are not valid JSON") from exc
    try:
        jsonschema.validate(arguments, spec.parameters or {"type": "object"})
    except jsonschema.ValidationError as exc:
        raise InvalidToolCall(
            f"the arguments of '{spec.name}' do not match its schema: {exc.message}"
        ) from exc
    except jsonschema.SchemaError as exc:
        raise InvalidToolCall(
            f"the parameters schema of '{spec.name}' is invalid: {exc.message}"
        ) from exc
    return ToolCall(spec.name, json.dumps(arguments))


BARE_START = '{"name":'  # an answer that opens so is a call written without its tags


def tagged(kind: str) -> bool:
    """Whether a splitter's call piece was written inside `<tool_call>` tags."""
    return kind == "call"


class ToolCallSplitter:
    """push(text) -> [(kind, text)]: kind "content" (the answer), "call" (the JSON of one
    complete `<tool_call>`) or "bare_call" (an answer that is a call's JSON object without
    the tags, as Qwen2.5 writes at times: its opening object, held until it closes). A tag
    split across deltas is held until it is whole."""

    def __init__(self) -> None:
        self._held = ""
        self._in_call = False
        self._opening = True  # nothing but white space has been said yet
        self._bare = BareObject()

    def push(self, text: str) -> list[tuple[str, str]]:
        buf, self._held = self._held + text, ""
        out: list[tuple[str, str]] = []
        if self._opening:
            buf = self._open(buf, out)
        while buf:
            if self._in_call:
                end = buf.find(CLOSE)
                if end < 0:
                    self._held = buf  # the call is not complete yet
                    return out
                out.append(("call", buf[:end].strip()))
                buf, self._in_call = buf[end + len(CLOSE) :], False
                continue
            start = buf.find(OPEN)
            if start >= 0:
                if start:
                    out.append(("content", buf[:start]))
                buf, self._in_call = buf[start + len(OPEN) :], True
                continue
            keep = next(
                (n for n in range(min(len(OPEN) - 1, len(buf)), 0, -1) if buf.endswith(OPEN[:n])), 0
            )
            if len(buf) > keep:
                out.append(("content", buf[: len(buf) - keep]))
            self._held = buf[len(buf) - keep :]
            break
        return out

    def _open(self, buf: str, out: list[tuple[str, str]]) -> str:
        """The answer's opening: a bare call's object (held until it closes), else what
        the normal split takes."""
        squeezed = "".join(buf.split())
        if not squeezed or (BARE_START.startswith(squeezed) and not self._bare.text):
            self._held = buf  # white space, or a start that may still be a call
            return ""
        if not squeezed.startswith(BARE_START) and not self._bare.text:
            self._opening = False
            return buf
        whole = self._bare.take(buf)
        if whole is None:
            return ""  # the object is not closed yet
        self._opening = False
        out.append(("bare_call", whole.strip()))
        return self._bare.rest

    def flush(self) -> list[tuple[str, str]]:
        """An unfinished call at the end is text, not a call."""
        held, self._held = self._held, ""
        if self._bare.text:
            held, self._bare = self._bare.text + held, BareObject()
        if not held:
            return []
        return [("content", (OPEN if self._in_call else "") + held)]


class BareObject:
    """A JSON object's text, taken piece by piece until its braces close (strings and
    their escapes read as JSON reads them)."""

    def __init__(self) -> None:
        self.text = ""
        self.rest = ""  # what followed the closing brace
        self._depth = 0
        self._in_string = self._escaped = False

    def take(self, piece: str) -> str | None:
        """The whole object once `piece` closes it (its rest in `rest`), else None."""
        for i, ch in enumerate(piece):
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif ch == "\\":
                    self._escaped = True
                elif ch == '"':
                    self._in_string = False
            elif ch == '"':
                self._in_string = True
            elif ch == "{":
                self._depth += 1
            elif ch == "}":
                self._depth -= 1
                if self._depth == 0:
                    whole, self.rest = self.text + piece[: i + 1], piece[i + 1 :]
                    self.text = ""
                    return whole
        self.text += piece
        return None
