"""The MCP calls one response makes: each is an `mcp_call` output item, announced with
its arguments when the model closes its `<tool_call>` (`response.mcp_call_arguments.*`),
called at once (`response.mcp_call.in_progress`), and finished with the tool's output or
its error (`response.mcp_call.completed`/`failed`); the generation then goes on from it
in the same response. A tool that needs approval gets an `mcp_approval_request` item
instead, and is called once the client approves it (app/tools/approvals.py).

Arguments that do not match the tool's schema are a failed call (a protocol error the
model reads and answers), never sent to the server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from app.llm.tool_calls import InvalidToolCall, parse_call
from app.protocol import events
from app.protocol.server_events import (
    ItemCreated,
    ItemDone,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    OutputItemAdded,
    OutputItemDone,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink
from app.tools.mcp_connection import McpFailure, protocol_error
from app.tools.mcp_items import McpApprovalRequestItem, McpApprovalResponseItem, McpCallItem
from app.tools.mcp_toolset import McpToolRef

INVALID_PARAMS = -32602  # JSON-RPC's code for arguments a method refuses
CANCELLED = "the user cancelled the call"
BACKGROUND: set[asyncio.Task[None]] = set()  # calls answered later (held: asyncio keeps weak refs)


def _named(raw: str) -> tuple[str, str] | None:
    """(name, arguments JSON) of a call's text, if it names a tool at all."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", {})
    return data["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)


class McpCalls:
    def __init__(
        self,
        response_id: str,
        refs: list[McpToolRef],
        conversation: Conversation | None,
        emit: EventSink,
        on_approval: Callable[[McpApprovalRequestItem, McpToolRef], None],
        on_background: Callable[[list[McpCallItem]], None] = lambda _calls: None,
        on_detached: Callable[[Callable[[], list[str]]], None] = lambda _cancel: None,
    ) -> None:
        self.response_id = response_id
        self.refs = {ref.tool.name: ref for ref in refs}
        self.conversation, self.emit, self.on_approval = conversation, emit, on_approval
        self.on_background, self.on_detached = on_background, on_detached
        self.detached = False
        self.finished: list[McpCallItem] = []  # the calls ended, in the order they ended
        self._calls: dict[asyncio.Task[None], tuple[McpCallItem, int]] = {}
        self._waits: dict[str, float | None] = {}  # a call's own background threshold
        self._running: list[asyncio.Task[None]] = []

    def claims(self, raw: str) -> bool:
        named = _named(raw)
        return named is not None and named[0] in self.refs

    def add(self, raw: str, index: int) -> Item:
        """The item of the call written as `raw` (a claimed call), at output `index`."""
        name, arguments = _named(raw) or ("", "{}")
        ref = self.refs[name]
        error: dict[str, Any] | None = None
        try:
            arguments = parse_call(raw, [ref.spec]).arguments
        except InvalidToolCall as exc:
            error = protocol_error(str(exc), INVALID_PARAMS).error
        if error is None and ref.needs_approval:
            return self._ask(ref, arguments, index)
        item = McpCallItem(
            id=events.new_id("item"),
            role="assistant",
            text="",
            status="in_progress",
            server_label=ref.server.server_label,
            name=name,
            arguments=arguments,
        )
        self.start(item, ref, index, error)
        return item

    def start(
        self, item: McpCallItem, ref: McpToolRef | None, index: int, error: dict[str, Any] | None
    ) -> None:
        """Announce `item` and call its tool (or fail it with `error` at once)."""
        self._added(item, index)
        rid, arguments = self.response_id, item.arguments
        self.emit(
            McpCallArgumentsDelta(
                response_id=rid, item_id=item.id, output_index=index, delta=arguments
            )
        )
        self.emit(
            McpCallArgumentsDone(
                response_id=rid, item_id=item.id, output_index=index, arguments=arguments
            )
        )
        self.emit(McpCallInProgress(item_id=item.id, output_index=index))
        task = asyncio.create_task(self._call(item, ref, index, error), name=f"mcp-{item.name}")
        self._running.append(task)
        self._calls[task] = (item, index)
        own = ref.server.r1voice if ref is not None else None
        if ref is not None and own is not None and own.background_after_s is not None:
            self._waits[task.get_name()] = ref.background_after_s(None)

    async def _call(
        self, item: McpCallItem, ref: McpToolRef | None, index: int, error: dict[str, Any] | None
    ) -> None:
        output = None
        if error is None and ref is not None:
            try:
                arguments = json.loads(item.arguments)
                output = await ref.connection.call(
                    item.name, arguments, ref.connection.policy.timeout_s
                )
            except McpFailure as exc:
                error = exc.error
            except asyncio.CancelledError:  # its answer was cancelled (said so by _cancel)
                if item.error is None:
                    item.finish(None, {"type": "tool_execution_error", "message": CANCELLED})
                raise
        item.finish(output, error)
        self.finished.append(item)
        done = McpCallFailed if error is not None else McpCallCompleted
        self.emit(done(item_id=item.id, output_index=index))
        self._done(item, index)

    async def finish(self, background_after_s: float | None = None) -> str:
        """Wait for the calls started: "none" were, "done" (the answer goes on from their
        results), or "background": still running after `background_after_s`, they go on
        without this answer, and `on_background(names)` is told when they are done."""
        running, self._running = self._running, []
        if not running:
            return "none"
        waits = [self._waits.get(task.get_name(), background_after_s) for task in running]
        after = None if None in waits else max(w for w in waits if w is not None)
        try:
            _done, pending = await asyncio.wait(running, timeout=after)
        except asyncio.CancelledError:
            for task in running:
                task.cancel()  # the MCP SDK tells the server the request is cancelled
            raise
        if not pending:
            return "done"
        self.detached = True  # the response ends before these calls do
        self.on_detached(lambda: self._cancel(pending))
        ended = len(self.finished)
        waiting = asyncio.create_task(self._answer_later(pending, ended))
        BACKGROUND.add(waiting)
        waiting.add_done_callback(BACKGROUND.discard)
        return "background"

    async def _answer_later(self, pending: set[asyncio.Task[None]], ended: int) -> None:
        await asyncio.wait(pending)
        if not all(task.cancelled() for task in pending):  # a cancelled call is not answered
            self.on_background(self.finished[ended:])

    def _cancel(self, pending: set[asyncio.Task[None]]) -> list[str]:
        """Cancel the calls still running in the background; their names."""
        running = [task for task in pending if not task.done()]
        for task in running:
            task.cancel()  # the MCP SDK tells the server the request is cancelled
            item, index = self._calls[task]
            item.finish(None, {"type": "tool_execution_error", "message": CANCELLED})
            self.emit(McpCallFailed(item_id=item.id, output_index=index))  # now, not once
            self._done(item, index)  # the SDK has told the server
        return [task.get_name().removeprefix("mcp-") for task in running]

    def approved(
        self, pending: dict[str, tuple[McpApprovalRequestItem, McpToolRef]], first_index: int
    ) -> list[Item]:
        """The calls held for approval that the client has answered since: an approved
        one is made now, a declined one fails (the model reads that it was declined)."""
        answers = [
            item
            for item in (self.conversation.items if self.conversation is not None else [])
            if isinstance(item, McpApprovalResponseItem) and item.approval_request_id in pending
        ]
        calls: list[Item] = []
        for answer in answers:
            request, ref = pending.pop(answer.approval_request_id)
            item = McpCallItem(
                id=events.new_id("item"),
                role="assistant",
                text="",
                status="in_progress",
                server_label=request.server_label,
                name=request.name,
                arguments=request.arguments,
                approval_request_id=request.id,
            )
            declined = None
            if not answer.approve:
                reason = f": {answer.reason}" if answer.reason else ""
                message = f"the user declined the call{reason}"
                declined = {"type": "tool_execution_error", "message": message}
            self.start(item, ref, first_index + len(calls), declined)
            calls.append(item)
        return calls

    def _ask(self, ref: McpToolRef, arguments: str, index: int) -> Item:
        item = McpApprovalRequestItem(
            id=events.new_id("item"),
            role="assistant",
            text="",
            server_label=ref.server.server_label,
            name=ref.tool.name,
            arguments=arguments,
        )
        self._added(item, index)
        self._done(item, index)
        self.on_approval(item, ref)
        return item

    def _added(self, item: Item, index: int) -> None:
        rid = self.response_id
        self.emit(OutputItemAdded(response_id=rid, output_index=index, item=item.to_wire()))
        if self.conversation is not None:  # no status: GA says it is added, not yet done
            previous = self.conversation.add(item)
            self.emit(ItemCreated(previous_item_id=previous, item=item.to_wire()))

    def _done(self, item: Item, index: int) -> None:
        rid = self.response_id
        if not self.detached:  # a call done after its response ended is the conversation's
            self.emit(OutputItemDone(response_id=rid, output_index=index, item=item.to_wire()))
        if self.conversation is not None and item in self.conversation.items:
            self.emit(ItemDone(item=item.to_wire()))
