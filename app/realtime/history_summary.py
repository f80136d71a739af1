"""HistorySummary: the turns a long call's history drops, folded into a running summary.

Past its token budget the history drops its oldest whole turns (conversation.py, the
stable trim). With `session.r1voice.history: "summarize"` (the default) they are not
simply lost: once the answer that dropped them is done, the session's own LLM writes
them, with the summary written before, into one `system` item. That request runs at a
priority below every answer of the session (the engine admits lower values first), so
no turn waits for it; until it lands the model sees the history as a drop leaves it.
The summary is the conversation's first item and changes only at the next fold, so the
prompt's prefix stays cached between folds. A summary that fails leaves the
conversation as a drop does, and says so with an `error` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from app.llm import ChatMessage, GenerationParams, LLMBackend
from app.protocol import events
from app.protocol.server_events import Error, ItemCreated, ItemDeleted
from app.realtime.conversation import MESSAGE_OVERHEAD_TOKENS, Conversation, Item
from app.realtime.handoff import EventSink
from app.realtime.session_config import SessionConfig

log = logging.getLogger("r1voice.session")

SUMMARY_MAX_TOKENS = 160  # bounds the summary, and so what it takes of every later prompt
# The dropped turns are summarised this many tokens at a time, each request on the summary
# of the ones before: asked for half a context at once, Qwen2.5-0.5B kept the topics and
# lost the user's city and number; a few turns at a time it kept them.
FOLD_CHUNK_TOKENS = 384
# Priority levels below the session's answers: the engine's aging lets an answer that
# arrives up to `priority_aging_s` (4 s) per level later still go first.
SUMMARY_PRIORITY_OFFSET = 10
SUMMARY_LEAD = "Summary of the earlier conversation: "
SUMMARY_INSTRUCTIONS = (
    "You keep the memory of a long conversation between a user and an assistant. "
    "Write one short summary, at most 80 words, of the earlier summary and the turns "
    "you are given. Start with every fact about the user that the earlier summary "
    "holds: names, numbers, dates, places, and what the user asked for or wants. Then "
    "add the new facts from the turns. Leave out greetings and small talk, and do not "
    "copy the turns. Write only the summary."
)
_SPEAKERS = {"user": "User", "assistant": "Assistant", "tool": "Tool result", "system": "Note"}


def summary_prompt(previous: str | None, turns: list[Item]) -> list[ChatMessage]:
    """What the LLM is asked: the summary so far (None: none yet) and the turns to fold."""
    lines = [f"{_SPEAKERS.get(item.role, item.role)}: {item.text}" for item in turns]
    earlier = f"Earlier summary: {previous}\n\n" if previous else ""
    task = f"{earlier}Turns:\n" + "\n".join(lines) + "\n\nWrite the new summary."
    return [ChatMessage("system", SUMMARY_INSTRUCTIONS), ChatMessage("user", task)]


class HistorySummary:
    """Owns the session's summary item and the one summary being written, if any."""

    def __init__(self, config: SessionConfig, conversation: Conversation, sink: EventSink) -> None:
        self._config = config
        self._conversation = conversation
        self._sink = sink
        self.item: Item | None = None  # the summary in the conversation, once one landed
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def fold(self, dropped: list[Item], llm: LLMBackend) -> None:
        """Fold `dropped` (the turns a trim just removed) into the summary, in the
        background; folds run one after the other, each on the summary before it.
        Nothing happens with `history: "drop"`."""
        turns = [item for item in dropped if item.text]
        if self._closed or not turns or self._config.history != "summarize":
            return
        priority = self._config.priority + SUMMARY_PRIORITY_OFFSET
        self._task = asyncio.create_task(
            self._write(self._task, turns, llm, priority), name="history-summary"
        )

    async def settled(self) -> None:
        """Wait until no summary is being written (benchmarks, tests)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait([self._task])

    async def close(self) -> None:
        """Stop a summary being written (its LLM request is aborted)."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    async def _write(
        self,
        before: asyncio.Task[None] | None,
        turns: list[Item],
        llm: LLMBackend,
        priority: int,
    ) -> None:
        if before is not None:
            await asyncio.wait([before])
        try:
            text = await self._summarize(turns, llm, priority)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the turns stay dropped; the conversation goes on
            log.warning("the summary of %d items failed: %s", len(turns), exc)
            message = (
                f"the summary of {len(turns)} dropped items failed ({exc}); they are "
                "dropped without one"
            )
            self._sink(Error(code="summary_failed", message=message, kind="server_error"))
            return
        self._land(text)

    async def _summarize(self, turns: list[Item], llm: LLMBackend, priority: int) -> str:
        current = self.item if self._current() else None
        summary = (current.text or "").removeprefix(SUMMARY_LEAD) if current else None
        for chunk in await _chunks(turns, llm):  # each on the summary of those before
            summary = await _ask(summary, chunk, llm, priority)
        return summary or ""

    def _current(self) -> bool:
        """Whether the last summary is still in the conversation (a client may delete it)."""
        return self.item is not None and any(i is self.item for i in self._conversation.items)

    def _land(self, text: str) -> None:
        """The summary replaces the previous one (told as deleted, then the new one added)."""
        old = self.item if self._current() else None
        item = Item(id=events.new_id("item"), role="system", text=SUMMARY_LEAD + text)
        previous_id = self._conversation.replace(old, item)
        if old is not None:
            self._sink(ItemDeleted(item_id=old.id))
        self._sink(ItemCreated(previous_item_id=previous_id, item=item.to_wire()))
        self.item = item


async def _chunks(turns: list[Item], llm: LLMBackend) -> list[list[Item]]:
    """`turns` in runs of consecutive items of at most FOLD_CHUNK_TOKENS (one item at least)."""
    counts = await llm.count_tokens([item.text or "" for item in turns])
    chunks: list[list[Item]] = [[]]
    size = 0
    for item, n in zip(turns, counts, strict=True):
        if chunks[-1] and size + n > FOLD_CHUNK_TOKENS:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += n
    return chunks


async def _ask(previous: str | None, turns: list[Item], llm: LLMBackend, priority: int) -> str:
    """One summary request: `previous` and `turns` written into one new summary."""
    room = llm.context_length - SUMMARY_MAX_TOKENS
    while True:  # too many turns for the model's context: the oldest are only dropped
        messages = summary_prompt(previous, turns)
        counts = await llm.count_tokens([m.content for m in messages])
        if sum(counts) + MESSAGE_OVERHEAD_TOKENS * len(messages) <= room or len(turns) == 1:
            break
        turns = turns[1:]
    params = GenerationParams(max_tokens=SUMMARY_MAX_TOKENS, priority=priority)
    parts: list[str] = []
    stream = llm.stream_chat(messages, params, events.new_id("summary"))
    async with contextlib.aclosing(stream):  # a cancelled summary aborts its request
        async for delta in stream:
            parts.append(delta.text)
    text = " ".join("".join(parts).split())
    if not text:
        raise ValueError("the model wrote no summary")
    return text
