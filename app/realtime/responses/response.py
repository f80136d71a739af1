"""One assistant response: LLM text streamed out, cut into clauses, spoken by TTS.

The LLM producer and the TTS consumer run concurrently (a queue of clauses between
them), so the first clause is spoken while the model still writes the rest. R1
reasoning (`<think>`) goes out as `r1voice.reasoning.delta` (then `.done`, thinking.py)
and is never spoken.
Cancelling aborts the LLM request (closing its stream) and stops TTS at once; after a
barge-in only what was played stays in the conversation. Whatever goes wrong ends as
`response.done` with status `failed` and an `error` event; the session goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, cast

from app.llm import LLMBackendError, LLMDelta
from app.llm.tool_calls import ToolCallSplitter, tagged, tools_prompt
from app.models.voices import AUTO, text_language
from app.protocol import events
from app.protocol.server_events import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    Error,
    ItemCreated,
    ItemDeleted,
    ItemDone,
    OutputItemAdded,
    OutputItemDone,
    RateLimitsUpdated,
    ResponseCreated,
    ResponseDone,
    TextDelta,
    TextDone,
    TurnMetrics,
)
from app.realtime.conversation import Item
from app.realtime.handoff import TurnTiming
from app.realtime.responses.clause_chunker import ClauseChunker
from app.realtime.responses.function_calls import FunctionCalls
from app.realtime.responses.gate import EventGate
from app.realtime.responses.speaker import Speaker
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome, ResponseSpec
from app.realtime.responses.thinking import Thinking

log = logging.getLogger("r1voice.response")


def idle_note(ms: int) -> str:
    """What an idle nudge tells the model, as the prompt's last user message: after the
    answer, so the prompt's prefix (and its cached KV) is the previous answer's; a user
    message, because every chat template takes one there (R1's keeps only one system
    message); in parentheses, as stage directions, so it is not taken for the user's words."""
    return (
        f"(The user has said nothing for {ms / 1000:.0f} seconds. Say one short sentence "
        "that invites them to go on.)"
    )


class Response:
    """Runs and reports one response; `cancel()` is the urgent control path."""

    def __init__(
        self,
        spec: ResponseSpec,
        deps: ResponseDeps,
        timing: TurnTiming | None,
        on_done: Callable[[Response, ResponseOutcome], None],
    ) -> None:
        self.spec, self.deps, self.timing, self._on_done = spec, deps, timing, on_done
        self.id = events.new_id("resp")
        self.item_id = events.new_id("item")
        self.gate = EventGate(deps.sink, held=spec.early_user_text is not None)
        # the server's own track plays the audio (WebRTC): no audio deltas then
        self._playout = deps.playback.playout(self.id) if deps.playback and spec.audio else None
        self.speaker = (
            Speaker(
                self._synthesize,
                spec.output_format,
                deps.audio_lead_ms,
                self._send_audio,
                playout=self._playout,
            )
            if spec.audio
            else None
        )
        self.text = ""
        self.voice: str | None = None  # the voice speaking it, chosen at its first clause
        self.heard_language: str | None = None  # the language of the turn it answers
        self.calls = FunctionCalls(
            self.id, spec.tools, deps.conversation if spec.in_conversation else None, self.gate.emit
        )
        self.item = Item(
            id=self.item_id, role="assistant", text="", audio=spec.audio, status="in_progress"
        )
        self._done = False
        self._final: LLMDelta | None = None  # the stream's last delta: why it ended, its tokens
        self.first_token_at: float | None = None
        self.first_clause_at: float | None = None  # the first speakable piece was written
        self._task: asyncio.Task[None] | None = None
        self._cancel_reason = "client_cancelled"
        self._heard_ms: float | None = None  # what the client said it heard of it, paused
        self._dropped: list[Item] = []  # what the history dropped for this answer

    @property
    def done(self) -> bool:
        return self._done

    @property
    def early_user_text(self) -> str | None:
        return self.spec.early_user_text

    @property
    def audio_ms(self) -> float:
        return self.speaker.audio_ms if self.speaker else 0.0

    @property
    def held(self) -> bool:
        """An early answer whose turn has not ended: the client has seen nothing of it."""
        return self.gate.holding

    @property
    def shown(self) -> bool:
        return not self.gate.holding and bool(self.text or self.audio_ms)

    def text_played(self, audio_end_ms: float) -> str:
        return self.speaker.text_played(audio_end_ms) if self.speaker else self.text

    def start(self) -> None:
        self._announce()  # now, so a response cancelled before its first step still reports
        self._task = asyncio.create_task(self._run(), name=f"response-{self.id}")
        self._task.add_done_callback(self._finish_if_never_ran)

    def _finish_if_never_ran(self, _task: asyncio.Task[None]) -> None:
        if not self._done:  # cancelled before its first step: _run's finally never ran
            self._finish("cancelled", {"type": "cancelled", "reason": self._cancel_reason})

    async def cancel(self, reason: str = "client_cancelled") -> None:
        """Stop generating and speaking; `response.done` reports status `cancelled`.

        Returns once the response has finished. If the caller itself is cancelled while
        waiting, that cancellation propagates (it is not mistaken for the response's).
        """
        self._cancel_reason = reason
        if self.speaker is not None:  # no more audio leaves, even before the task unwinds
            self.speaker.stop()
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait([task])  # raises CancelledError only if *we* are cancelled

    @property
    def speaking(self) -> bool:
        """Its audio is still being produced (an audio answer not yet done)."""
        return self.speaker is not None and not self._done

    @property
    def paused(self) -> bool:
        return self.speaker is not None and self.speaker.paused

    def pause(self) -> None:
        """Speech over the answer: send no more audio until `resume` or `cancel` (the LLM
        goes on writing meanwhile). A text answer has nothing to pause."""
        if self.speaker is not None and not self._done:
            self.speaker.pause()

    def pause_again(self) -> None:
        """The speech that paused it went on after it resumed: send no more audio, and go
        on later from what was sent (the client was not told to drop its queue again)."""
        if self.speaker is not None and not self._done:
            self.speaker.pause(rewind=False)

    def resume(self) -> None:
        """The speech was no interruption: the audio goes on from what the client heard."""
        if self.speaker is not None:
            self._heard_ms = None
            self.speaker.resume()

    def truncate_paused(self, audio_end_ms: float) -> None:
        """The client truncated the paused answer (as clients do on speech_started): the
        item holds what it heard until the answer resumes (then it ends whole) or is
        cancelled (then it keeps that)."""
        self._heard_ms = audio_end_ms
        self.item.text, self.item.status = self.text_played(audio_end_ms), "incomplete"

    def release(self, timing: TurnTiming, previous_item_id: str | None) -> None:
        """The turn really ended with the words this early answer replied to: show it."""
        self.timing = timing
        self.gate.release(previous_item_id)
        self._join_conversation()

    async def discard(self) -> None:
        """Speech resumed or the final words differ: drop it, unseen."""
        await self.cancel("discarded")

    # -- the run ------------------------------------------------------------------------

    def _item(self, status: str) -> dict[str, Any]:
        content = (
            [] if status == "in_progress" else [events.assistant_part(self.spec.audio, self.text)]
        )
        return events.message_item(self.item_id, "assistant", status, content)

    def _join_conversation(self) -> None:
        """An item from its start (truncatable while it plays), unless out of band."""
        if self.spec.in_conversation:
            self.deps.conversation.add(self.item)

    def _announce(self) -> None:
        emit = self.gate.emit
        emit(ResponseCreated(response=self._object("in_progress", [])))
        emit(OutputItemAdded(response_id=self.id, output_index=0, item=self._item("in_progress")))
        if self.spec.in_conversation:
            previous = self.deps.conversation.last_id
            emit(ItemCreated(previous_item_id=previous, item=self._item("in_progress")))
        if not self.gate.holding:
            self._join_conversation()
        part = events.assistant_part(self.spec.audio, "")
        emit(ContentPartAdded(response_id=self.id, item_id=self.item_id, part=part))

    def _object(
        self,
        status: str,
        output: list[dict[str, Any]],
        details: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        conversation_id = self.deps.conversation.id if self.spec.in_conversation else None
        wire = events.response_object(self.id, status, output, details, usage)
        fields = self.spec.wire_fields(conversation_id)
        if self.voice is not None and self.spec.voice == AUTO:  # say which voice spoke
            fields["audio"]["output"]["voice"] = self.voice
        return {**wire, **fields}

    def _usage(self) -> dict[str, Any] | None:
        """The backend's counts, from its final delta. A stream we closed (a cancelled
        answer) or that failed never gave one: null then, as 0 would claim nothing was
        spent."""
        final = self._final
        if final is None:
            return None
        return events.response_usage(
            final.prompt_tokens, final.completion_tokens, final.cached_tokens or 0
        )

    async def _run(self) -> None:
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        speaker = self.speaker
        speaking = (
            asyncio.create_task(speaker.run(clauses, self.gate.released)) if speaker else None
        )
        status, details = "completed", cast(dict[str, Any] | None, None)
        try:
            await self._generate(clauses)
            if self._final is not None and self._final.finish_reason == "length":
                status = "incomplete"  # cut by max_output_tokens, yet spoken to its end
                details = {"type": "incomplete", "reason": "max_output_tokens"}
            if speaking is not None:
                try:
                    await speaking
                except Exception as exc:  # the words stand: this answer is text only
                    self._speech_failed(exc)
            await self.gate.released.wait()  # a held text answer waits for its turn to end
        except asyncio.CancelledError:
            status, details = "cancelled", {"type": "cancelled", "reason": self._cancel_reason}
            speaker = self.speaker
            # what was heard: told by the barge-in, or known exactly (the server's track)
            if speaker is not None and (self._cancel_reason == "turn_detected" or speaker.exact):
                heard = speaker.played_ms() if self._heard_ms is None else self._heard_ms
                self.text = speaker.text_played(heard)  # what was heard
        except Exception as exc:  # every failure is reported; the session goes on
            code = exc.code if isinstance(exc, LLMBackendError) else "server_error"
            if code == "server_error":
                log.exception("response %s failed", self.id)
            # The client's to fix (a prompt too long, a bad parameter) or the server's.
            client_side = code in ("llm_error", "context_length_exceeded")
            kind = "invalid_request_error" if client_side else "server_error"
            message = f"the response failed: {exc}"
            self.gate.emit(
                Error(code=code, message=message, kind=kind, client_event_id=self.spec.event_id)
            )
            status = "failed"
            details = {"type": "failed", "error": {"code": code, "message": str(exc)}}
        finally:
            if speaking is not None and not speaking.done():
                speaking.cancel()
                await asyncio.wait([speaking])
            if self._dropped:  # after the answer, so that no voice turn waits for it
                self.deps.on_dropped(self._dropped, self.deps.llm)
            self._finish(status, details)

    def _speech_failed(self, exc: Exception) -> None:
        log.warning("response %s: speech synthesis failed: %s", self.id, exc)
        message = f"speech synthesis failed ({exc}); this answer is text only"
        self.gate.emit(Error(code="tts_failed", message=message, kind="server_error"))

    async def _generate(self, clauses: asyncio.Queue[str | None]) -> None:
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
        self._dropped = history.dropped
        left = llm.context_length - history.tokens - spec.params.max_tokens  # reserved
        self.gate.emit(
            RateLimitsUpdated(context_tokens=llm.context_length, remaining_tokens=max(0, left))
        )
        opens = llm.prompt_opens_reasoning(history.messages)
        thinking = Thinking(opens, self.id, self.item_id, self.gate.emit)
        chunker, calls = ClauseChunker(), ToolCallSplitter()
        stream = llm.stream_chat(history.messages, spec.params, self.id)
        async with contextlib.aclosing(stream):  # abort the LLM request even if cancelled here
            async for delta in stream:
                if delta.finished:
                    self._final = delta
                if not delta.text:
                    continue
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
                for text in thinking.push(delta):
                    self._route(text, chunker, calls, clauses)
        for text in [*thinking.flush(), *(text for _, text in calls.flush())]:
            self._route(text, chunker, None, clauses)
        for clause in chunker.flush():
            self._queue_clause(clause, clauses)
        clauses.put_nowait(None)

    def _route(
        self,
        text: str,
        chunker: ClauseChunker,
        calls: ToolCallSplitter | None,
        clauses: asyncio.Queue[str | None],
    ) -> None:
        """Tool calls become items, the rest is the spoken answer."""
        if calls is not None and self.spec.tools:
            for part, piece in calls.push(text):
                kept = self.calls.add(piece, tagged(part)) if part != "content" else piece
                if kept:
                    self._speak_text(kept, chunker, clauses)
            return
        self._speak_text(text, chunker, clauses)

    def _speak_text(
        self, text: str, chunker: ClauseChunker, clauses: asyncio.Queue[str | None]
    ) -> None:
        self.text += text
        delta = AudioTranscriptDelta if self.spec.audio else TextDelta
        self.gate.emit(delta(response_id=self.id, item_id=self.item_id, delta=text))
        for clause in chunker.push(text):
            self._queue_clause(clause, clauses)

    def _queue_clause(self, clause: str, clauses: asyncio.Queue[str | None]) -> None:
        if self.first_clause_at is None:
            self.first_clause_at = time.monotonic()
        clauses.put_nowait(clause)

    async def _synthesize(self, text: str, rate: int, slack_s: float) -> Any:
        if self.voice is None:  # the answer's first clause says its language
            language = text_language(text, self.heard_language)
            self.voice = self.deps.voices.choose(self.spec.voice, language)
        return await self.deps.voices.speak(text, rate, self.spec.speed, self.voice, slack_s)

    def _send_audio(self, piece: bytes) -> None:
        if self._playout is None:  # the client plays it
            audio = events.encode_base64(piece)
            self.gate.emit(AudioDelta(response_id=self.id, delta=audio, item_id=self.item_id))
        self.deps.on_audio(piece, self.spec.output_format)

    def _finish(self, status: str, details: dict[str, Any] | None) -> None:
        self._done = True
        visible = not (self._cancel_reason == "discarded" or self.gate.holding)
        if visible:
            self._report(status, details)
        speaker = self.speaker
        timing = self.timing if visible else None
        seconds = (
            timing.stage_seconds(
                first_token=self.first_token_at,
                first_clause=self.first_clause_at,
                first_synthesized=speaker.first_synthesized_at if speaker else None,
                first_audio=speaker.first_audio_at if speaker else None,
            )
            if timing
            else None
        )
        reason = self._cancel_reason if visible and status == "cancelled" else None
        outcome = ResponseOutcome(
            status if visible else "discarded", visible, seconds, reason, self.spec.in_conversation
        )
        self._on_done(self, outcome)
        if seconds is not None:
            language = timing.language if timing else None
            self.gate.emit(
                TurnMetrics(
                    response_id=self.id,
                    stage_seconds=seconds,
                    audio_ms=self.audio_ms,
                    status=status,
                    language=language,
                )
            )

    def _report(self, status: str, details: dict[str, Any] | None) -> None:
        emit, rid, iid = self.gate.emit, self.id, self.item_id
        if self.spec.audio:
            emit(AudioDone(response_id=rid, item_id=iid))
            emit(AudioTranscriptDone(response_id=rid, item_id=iid, transcript=self.text))
        else:
            emit(TextDone(response_id=rid, item_id=iid, text=self.text))
        part = events.assistant_part(self.spec.audio, self.text)
        emit(ContentPartDone(response_id=rid, item_id=iid, part=part))
        item_status = "completed" if status == "completed" else "incomplete"
        emit(OutputItemDone(response_id=self.id, output_index=0, item=self._item(item_status)))
        self.item.text, self.item.status = self.text, item_status
        if self.item in self.deps.conversation.items:  # not deleted meanwhile
            emit(ItemDone(item=self.item.to_wire()))
        items = [self._item(item_status), *self.calls.wire_items()]
        emit(ResponseDone(response=self._object(status, items, details, self._usage())))
