"""One task delegated to the backend model (server delegation), told to the client as a
Responses stream (`response.event`, each nested event carrying the delegation id).

A run that calls the session's function tools ends with the calls (`function_call`
items, then `response.completed`); the client runs them and answers each with
`response.item.create` (a `function_call_output` naming its `call_id`), then
`response.create` continues the task with their outputs. A run without calls is the
conclusion, which the live model says."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.live.backend import call_item, instructions, results, run_step, task_messages
from app.live.config import ResponsesBackend
from app.llm.backend import ChatMessage
from app.llm.catalog import LLMCatalog
from app.llm.tool_calls import ToolCall
from app.protocol import events
from app.protocol.errors import ProtocolError

MAX_ROUNDS = 8  # of tool calls in one task: a model that calls forever is stopped
Emit = Callable[[dict[str, Any]], None]  # one nested Responses event


class ToolOutputs:
    """The function calls the backend's tasks wait on, by call id, and their outputs."""

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, ToolCall]] = {}  # call id -> (delegation, call)
        self._outputs: dict[str, str] = {}
        self._resumed: dict[str, asyncio.Future[None]] = {}  # delegation -> its resume

    def wait(self, delegation_id: str, calls: dict[str, ToolCall]) -> asyncio.Future[None]:
        for call_id, call in calls.items():
            self._calls[call_id] = (delegation_id, call)
        future = asyncio.get_running_loop().create_future()
        self._resumed[delegation_id] = future
        return future

    def output(self, item: dict[str, Any], event_id: str | None) -> None:
        """A client's `response.item.create`: the output of one call of a waiting task."""
        call_id = item.get("call_id")
        if item.get("type") != "function_call_output" or not isinstance(call_id, str):
            raise ProtocolError(
                "invalid_value",
                "response.item.create takes a function_call_output item with the call_id "
                "of a delegated task's function call",
                param="item.type" if item.get("type") != "function_call_output" else "item",
                event_id=event_id,
            )
        if call_id not in self._calls:
            raise ProtocolError(
                "call_not_found",
                f"no delegated task waits on call {call_id!r}: answer a function_call of a "
                "response.event",
                param="item.call_id",
                event_id=event_id,
            )
        output = item.get("output")
        self._outputs[call_id] = output if isinstance(output, str) else str(output or "")

    def resume(self, event_id: str | None) -> None:
        """A client's `response.create`: every task whose calls all have outputs goes on."""
        ready = [
            d
            for d, future in self._resumed.items()
            if not future.done()
            and all(c in self._outputs for c, (owner, _) in self._calls.items() if owner == d)
        ]
        if not ready:
            waiting = [c for c in self._calls if c not in self._outputs]
            raise ProtocolError(
                "no_response_waiting",
                "no delegated task has all its tool outputs: send a function_call_output "
                f"for each of {waiting} first"
                if waiting
                else "no delegated task waits on tool outputs",
                param="type",
                event_id=event_id,
            )
        for delegation_id in ready:
            self._resumed.pop(delegation_id).set_result(None)

    def take(self, delegation_id: str) -> list[tuple[ToolCall, str]]:
        """The delegation's calls with their outputs, forgotten here."""
        mine = [c for c, (owner, _) in self._calls.items() if owner == delegation_id]
        done = [(self._calls.pop(c)[1], self._outputs.pop(c, "")) for c in mine]
        return done


async def work(
    config: ResponsesBackend,
    llms: LLMCatalog,
    task: str,
    context: list[ChatMessage],
    delegation_id: str,
    emit: Emit,
    outputs: ToolOutputs,
    response_id: str,
) -> str:
    """The task worked out, tool calls and all: its conclusion (thinking dropped); its
    first run is `response_id`, which session.delegation.created named."""
    messages = task_messages(config, task, context)
    for _ in range(MAX_ROUNDS):
        response = {"id": response_id, "object": "response", "model": config.model}
        response_id = events.new_id("resp")  # a continuation after tool outputs: its own
        emit({"type": "response.created", "response": {**response, "status": "in_progress"}})
        item_id = events.new_id("msg")

        def text(delta: str, item_id: str = item_id) -> None:
            emit({"type": "response.output_text.delta", "item_id": item_id, "delta": delta})

        step = await run_step(config, llms, messages, text)
        if not step.calls:
            part = {"type": "output_text", "text": step.text, "annotations": []}
            message: dict[str, Any] = {"type": "message", "id": item_id, "role": "assistant"}
            message |= {"status": "completed", "content": [part]}
            emit({"type": "response.output_item.done", "output_index": 0, "item": message})
            emit({"type": "response.completed", "response": {**response, "status": "completed"}})
            return step.text
        calls = {events.new_id("call"): call for call in step.calls}
        for i, (call_id, call) in enumerate(calls.items()):
            emit(
                {
                    "type": "response.output_item.done",
                    "output_index": i,
                    "item": call_item(call, call_id),
                }
            )
        resumed = outputs.wait(delegation_id, calls)
        emit({"type": "response.completed", "response": {**response, "status": "completed"}})
        await resumed
        messages = [instructions(config, first=False), *messages[1:]]
        messages += results(outputs.take(delegation_id), task)
    return ""
