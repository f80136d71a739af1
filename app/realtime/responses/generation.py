"""The LLM side of one response: its prompt from the conversation, then the stream split
into R1's thinking (shown, never spoken), function calls (output items) and the answer's
words, which are cut into clauses for the voice."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from app.llm import LLMDelta
from app.llm.tool_calls import ToolCallSplitter, tagged, tools_prompt
from app.protocol import events
from app.protocol.server_events import ItemDeleted, RateLimitsUpdated, Wire
from app.realtime.conversation import Item
from app.realtime.handoff import EventSink
from app.realtime.responses.clause_chunker import ClauseChunker
from app.realtime.responses.function_calls import FunctionCalls
from app.realtime.responses.spec import ResponseDeps, ResponseSpec
from app.realtime.responses.thinking import Thinking


def idle_note(ms: int) -> str:
    """What an idle nudge tells the model, as the prompt's last user message: after the
    answer, so the prompt's prefix (and its cached KV) is the previous answer's; a user
    message, because every chat template takes one there (R1's keeps only one system
    message); in parentheses, as stage directions, so it is not taken for the user's words."""
    return (
        f"(The user has said nothing for {ms / 1000:.0f} seconds. Say one short sentence "
        "that invites them to go on.)"
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
        llm, spec = self.deps.llm, self.spec
        history = await self.deps.conversation.history(
            spec.instructions + tools_prompt(list(spec.tools), spec.tool_choice),
            llm.context_length - spec.params.max_tokens,
            llm.count_tokens,
            spec.early_user_text,
            spec.language,
            spec.early_language,
            note=idle_note(spec.idle_ms) if spec.idle_ms is not None else None,
        )
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
        for clause in self._chunker.flush():
            self._queue_clause(clause, clauses)
        clauses.put_nowait(None)

    def _route(
        self, text: str, calls: ToolCallSplitter | None, clauses: asyncio.Queue[str | None]
    ) -> None:
        """Tool calls become items, the rest is the spoken answer."""
        if calls is not None and self.spec.tools:
            for part, piece in calls.push(text):
                kept = self.calls.add(piece, tagged(part)) if part != "content" else piece
                if kept:
                    self._words(kept, clauses)
            return
        self._words(text, clauses)

    def _words(self, text: str, clauses: asyncio.Queue[str | None]) -> None:
        self._on_words(text)
        for clause in self._chunker.push(text):
            self._queue_clause(clause, clauses)

    def _queue_clause(self, clause: str, clauses: asyncio.Queue[str | None]) -> None:
        if self.first_clause_at is None:
            self.first_clause_at = time.monotonic()
        clauses.put_nowait(clause)
