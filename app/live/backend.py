"""Server delegation (`delegation.type: "responses"`): the task the live model delegates
runs on a second model of this server (`delegation.responses.model`, any LLM the server
offers, e.g. the bundled qwen2.5-coder-1.5b-instruct or an R1-style reasoning model). Its
thinking (`<think>`) is dropped, never spoken; it may call the session's function tools
(`delegation.responses.tools`), which the client runs; its conclusion comes back to the
live model as commentary, spoken at the next natural point."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.live.config import ResponsesBackend
from app.llm import LLMBackend
from app.llm.backend import ChatMessage, GenerationParams
from app.llm.catalog import LLMCatalog
from app.llm.reasoning import ThinkSplitter
from app.llm.tool_calls import InvalidToolCall, ToolCall, ToolCallSplitter, ToolSpec, parse_call
from app.llm.tool_calls import tools_prompt as offer
from app.protocol import events
from app.protocol.errors import ProtocolError

# The request is most often a speech transcript: told so, the backend answers what was
# meant ("which planet is known as the red planet." unpunctuated had it say Mercury).
INSTRUCTIONS = (
    "You are the expert behind a friendly voice assistant. The user's request was "
    "transcribed from speech, so a word may be misheard: answer what they most likely "
    "meant. Your reply is read to the user as it is: one or two short spoken sentences "
    "without lists, markdown or emojis, the first a complete sentence that restates what "
    "was asked with its answer."
)
# A reasoning model's thinking budget by `reasoning.effort` (tokens inside <think>).
REASONING_TOKENS = {"none": 0, "minimal": 64, "low": 256, "medium": 1024, "high": 4096}
MAX_OUTPUT_TOKENS = 256


def check_model(config: ResponsesBackend, llms: LLMCatalog, event_id: str | None) -> None:
    if config.model not in llms.names():
        raise ProtocolError(
            "invalid_value",
            f"delegation.responses.model {config.model!r} is not a model of this server; "
            f"choose one of: {', '.join(llms.names())}",
            param="session.delegation.responses.model",
            event_id=event_id,
        )
    tool_specs(config, event_id)


def tool_specs(config: ResponsesBackend, event_id: str | None = None) -> list[ToolSpec]:
    """The backend's function tools; a hosted tool (web search, MCP, ...) is refused by
    name: the delegated model here calls functions the client runs."""
    specs = []
    for i, tool in enumerate(config.tools or []):
        param = f"session.delegation.responses.tools[{i}]"
        if tool.get("type") != "function":
            raise ProtocolError(
                "unsupported_tool",
                f"{param}: {tool.get('type')!r} tools are not served to the delegated model "
                "here; give function tools (type 'function'), which the client runs",
                param=param + ".type",
                event_id=event_id,
            )
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ProtocolError(
                "missing_required_parameter",
                f"{param}: a function tool needs a 'name'",
                param=param + ".name",
                event_id=event_id,
            )
        params = tool.get("parameters")
        specs.append(
            ToolSpec(
                tool["name"],
                str(tool.get("description") or ""),
                params if isinstance(params, dict) else None,
            )
        )
    return specs


@dataclass
class Step:
    """One run of the backend model: its conclusion (thinking dropped) or its calls."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)


def instructions(config: ResponsesBackend, first: bool) -> ChatMessage:
    """The backend's instructions with the tools on offer (`tool_choice`, e.g. "required",
    holds for the task's first run: once the tools answered, the model may conclude)."""
    choice = config.tool_choice if isinstance(config.tool_choice, str) and first else None
    return ChatMessage(
        "system", (config.instructions or INSTRUCTIONS) + offer(tool_specs(config), choice)
    )


def task_messages(
    config: ResponsesBackend, task: str, context: list[ChatMessage]
) -> list[ChatMessage]:
    """The backend's prompt: its instructions, the conversation so far, the task."""
    return [instructions(config, first=True), *context, ChatMessage("user", task)]


def results(calls: list[tuple[ToolCall, str]], task: str) -> list[ChatMessage]:
    """The calls as the model wrote them, their outputs, and the note that makes the
    model say what they mean (a small model left with a bare result writes JSON back)."""
    said = " ".join(f"{call.name} answered: {output.strip()}." for call, output in calls)
    written = "\n".join(
        f'<tool_call>\n{{"name": {json.dumps(c.name)}, "arguments": {c.arguments}}}\n</tool_call>'
        for c, _ in calls
    )
    return [
        ChatMessage("assistant", written),
        *[ChatMessage("tool", output) for _, output in calls],
        ChatMessage("user", f"({said} With this, answer in a sentence: {task})"),
    ]


async def run_step(
    config: ResponsesBackend,
    llms: LLMCatalog,
    messages: list[ChatMessage],
    on_text: Callable[[str], None],
) -> Step:
    """The backend model on `messages`: its answer's text (each piece to `on_text` as it
    comes) and the function calls it made; thinking and malformed calls are dropped."""
    llm: LLMBackend = await llms.load(config.model)
    effort = (config.reasoning or {}).get("effort", "low")
    params = GenerationParams(
        max_tokens=config.max_output_tokens or MAX_OUTPUT_TOKENS,
        max_reasoning_tokens=REASONING_TOKENS.get(str(effort), REASONING_TOKENS["low"]),
    )
    thinking = ThinkSplitter(llm.prompt_opens_reasoning(messages))
    calls, specs, step = ToolCallSplitter(), tool_specs(config), Step()

    def take(pieces: list[tuple[str, str]]) -> None:
        for kind, text in pieces:
            if kind == "content":
                step.text += text
                on_text(text)
                continue
            try:
                step.calls.append(parse_call(text, specs))
            except InvalidToolCall:
                step.text += "" if kind == "call" else text  # a bare object that is no call

    async for delta in llm.stream_chat(messages, params, events.new_id("deleg_req")):
        for kind, text in thinking.push(delta.text) if delta.text else []:
            if kind == "content":
                take(calls.push(text) if specs else [("content", text)])
    for kind, text in thinking.flush():
        if kind == "content":
            take(calls.push(text) if specs else [("content", text)])
    take(calls.flush() if specs else [])
    step.text = step.text.strip()
    return step


def call_item(call: ToolCall, call_id: str) -> dict[str, Any]:
    """A function call as the Responses stream carries it."""
    return {
        "type": "function_call",
        "id": events.new_id("fc"),
        "call_id": call_id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }
