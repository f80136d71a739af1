"""The LLM side of one response: its prompt from the conversation, then the stream split
into R1's thinking (shown, never spoken), function calls (output items) and the answer's
words, which are cut into clauses for the voice."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from app.llm import LLMDelta
from app.llm.tool_calls import ToolCallSplitter, ToolSpec, tagged, tools_prompt
from app.protocol import events
from app.protocol.server_events import ItemDeleted, RateLimitsUpdated, Wire
from app.realtime.conversation import History, Item
from app.realtime.handoff import EventSink
from app.realtime.responses.clause_chunker import ClauseChunker
from app.realtime.responses.function_calls import FunctionCalls
from app.realtime.responses.mcp_calls import McpCalls
from app.realtime.responses.spec import ResponseDeps, ResponseSpec
from app.realtime.responses.thinking import Thinking
from app.tools.acknowledgements import checking, result_note
from app.tools.mcp_items import McpCallItem
from app.tools.mcp_toolset import McpToolRef

# rounds of one answer: the one that calls MCP tools, the one that reads their results
MAX_TOOL_ROUNDS = 2


def _results(calls: list[McpCallItem]) -> list[tuple[str, str]]:
    return [(call.name, call.result()) for call in calls]


def idle_note(ms: int) -> str:
    """What an idle nudge tells the model, as the prompt's last user message: after the
    answer, so the prompt's prefix (and its cached KV) is the previous answer's; a user
    message, because every chat template takes one there (R1's keeps only one system
    message); in parentheses, as stage directions, so it is not taken for the user's words."""
    return (
        f"(The user has said nothing for {ms / 1000:.0f} seconds. Say one short sentence "
        "that invites them to go on.)"
    )


async def prompt_history(
    spec: ResponseSpec,
    deps: ResponseDeps,
    offered: list[ToolSpec],
    choice: str,
    note: str | None = None,
    drop: bool = True,
) -> History:
    """The conversation as the answer's prompt: its instructions with the tools offered,
    within the context left after the answer's tokens (`drop` False: a look ahead that
    leaves the conversation as it is, see Responses.prime)."""
    llm = deps.llm
    return await deps.conversation.history(
        spec.instructions + tools_prompt(offered, choice),
        llm.context_length - spec.params.max_tokens,
        llm.count_tokens,
        spec.early_user_text,
        spec.language,
        spec.early_language,
        note=note,
        drop=drop,
    )


class Generation:
    """Writes one answer: `run(clauses)` queues its clauses (then None); each piece of its
    words goes to `on_words` as it is written."""

    def __init__(
        self,
        spec: ResponseSpec,
        deps: ResponseDeps,
        ids: tuple[str, str],
        emit: EventSink,
        calls: FunctionCalls,
        on_words: Callable[[str], None],
    ) -> None:
        self.spec, self.deps, self.emit, self.calls = spec, deps, emit, calls
        self.response_id, self.item_id = ids
        self._on_words = on_words
        self.final: LLMDelta | None = None  # the stream's last delta: why it ended, its tokens
        self.first_token_at: float | None = None
        self.first_clause_at: float | None = None  # the first speakable piece was written
        self.heard_language: str | None = None  # the language of the turn it answers
        self.dropped: list[Item] = []  # what the history dropped for this answer
        self._chunker = ClauseChunker()
        self._offered: list[ToolSpec] = []  # the tools this round offers
        self.said_words = False

    @property
    def cut_by_length(self) -> bool:
        """The answer ended at `max_output_tokens`."""
        return self.final is not None and self.final.finish_reason == "length"

    def usage(self) -> Wire | None:
        """The backend's counts, from its final delta. A stream we closed (a cancelled
        answer) or that failed never gave one: null then, as 0 would claim nothing was
        spent."""
        final = self.final
        if final is None:
            return None
        return events.response_usage(
            final.prompt_tokens, final.completion_tokens, final.cached_tokens or 0
        )

    async def run(self, clauses: asyncio.Queue[str | None]) -> None:
        """The answer, in rounds: a round that called MCP tools is followed by one that
        answers from their results and calls none (the small models here, offered the
        tools again, call them again rather than answer)."""
        if self.spec.say is not None:  # words to say as they are: no model writes them
            self._words(self.spec.say, clauses)
            for clause in self._chunker.flush():
                self._queue_clause(clause, clauses)
            clauses.put_nowait(None)
            return
        offered = [*self.spec.tools, *(ref.spec for ref in await self._mcp_tools())]
        for round_ in range(MAX_TOOL_ROUNDS):
            choice = self.spec.tool_choice if round_ == 0 else "none"
            mcp = self.calls.mcp
            note = result_note(_results(mcp.finished)) if mcp and mcp.finished else None
            await self._round(clauses, offered if choice != "none" else [], choice, note)
            for clause in self._chunker.flush():  # said while the tools run
                self._queue_clause(clause, clauses)
            mcp = self.calls.mcp
            later = self.deps.mcp.policy.background_after_s if self.deps.mcp else None
            finished = await mcp.finish(later) if mcp else "none"
            if finished == "background":  # said once; the answer comes when the call is done
                if not self.said_words:
                    self._words(checking(self.heard_language or self.spec.language), clauses)
                for clause in self._chunker.flush():
                    self._queue_clause(clause, clauses)
            if finished != "done":
                break
        clauses.put_nowait(None)

    async def _mcp_tools(self) -> list[McpToolRef]:
        toolset, servers = self.deps.mcp, list(self.spec.mcp_servers)
        if toolset is None or not servers or self.spec.tool_choice == "none":
            return []
        refs = await toolset.tools(servers)
        if refs:
            conversation = self.deps.conversation if self.spec.in_conversation else None
            mcp = McpCalls(
                self.response_id,
                refs,
                conversation,
                self.emit,
                toolset.hold,
                lambda calls: self.deps.on_tool_result(result_note(_results(calls))),
                toolset.running_later,
            )
            self.calls.mcp = mcp
            self.calls.items += mcp.approved(toolset.pending, 1 + len(self.calls.items))
            await mcp.finish()  # what the client approved is answered first
        return refs

    async def _round(
        self,
        clauses: asyncio.Queue[str | None],
        offered: list[ToolSpec],
        choice: str,
        note: str | None = None,
    ) -> None:
        llm, spec = self.deps.llm, self.spec
        self._offered = offered
        idle = idle_note(spec.idle_ms) if spec.idle_ms is not None else None
        history = await prompt_history(spec, self.deps, offered, choice, note or spec.note or idle)
        self.heard_language = history.language
        for item in history.dropped:  # the conversation really lost them: say so now
            self.deps.sink(ItemDeleted(item_id=item.id))
        self.dropped = history.dropped
        left = llm.context_length - history.tokens - spec.params.max_tokens  # reserved
        self.emit(
            RateLimitsUpdated(context_tokens=llm.context_length, remaining_tokens=max(0, left))
        )
        opens = llm.prompt_opens_reasoning(history.messages)
        thinking = Thinking(opens, self.response_id, self.item_id, self.emit)
        calls = ToolCallSplitter()
        stream = llm.stream_chat(history.messages, spec.params, self.response_id)
        async with contextlib.aclosing(stream):  # abort the LLM request even if cancelled here
            async for delta in stream:
                if delta.finished:
                    self.final = delta
                if not delta.text:
                    continue
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
                for text in thinking.push(delta):
                    self._route(text, calls, clauses)
        for text in [*thinking.flush(), *(text for _, text in calls.flush())]:
            self._route(text, None, clauses)

    def _route(
        self, text: str, calls: ToolCallSplitter | None, clauses: asyncio.Queue[str | None]
    ) -> None:
        """Tool calls become items, the rest is the spoken answer."""
        if calls is not None and self._offered:
            for part, piece in calls.push(text):
                kept = self.calls.add(piece, tagged(part)) if part != "content" else piece
                if kept:
                    self._words(kept, clauses)
            return
        self._words(text, clauses)

    def _words(self, text: str, clauses: asyncio.Queue[str | None]) -> None:
        self.said_words = self.said_words or bool(text.strip())
        self._on_words(text)
        for clause in self._chunker.push(text):
            self._queue_clause(clause, clauses)

    def _queue_clause(self, clause: str, clauses: asyncio.Queue[str | None]) -> None:
        if self.first_clause_at is None:
            self.first_clause_at = time.monotonic()
        clauses.put_nowait(clause)
