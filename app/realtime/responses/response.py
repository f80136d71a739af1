"""One assistant response: LLM text streamed out, cut into clauses, spoken by TTS.

The LLM producer (generation.py) and the TTS consumer (answer_voice.py) run concurrently,
a queue of clauses between them, so the first clause is spoken while the model still
writes the rest. R1 reasoning goes out as `r1voice.reasoning.*` (thinking.py) and is
never spoken. What the client is told is report.py's; an early answer's events wait in
its gate (gate.py) until its turn really ends.
Cancelling aborts the LLM request (closing its stream) and stops TTS at once; after a
barge-in only what was played stays in the conversation. Whatever goes wrong ends as
`response.done` with status `failed` and an `error` event (ending.py); the session goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.protocol import events
from app.protocol.server_events import ItemDone, TurnMetrics, Wire
from app.realtime.conversation import Item
from app.realtime.handoff import TurnTiming
from app.realtime.responses import ending
from app.realtime.responses.answer_voice import AnswerVoice
from app.realtime.responses.function_calls import FunctionCalls
from app.realtime.responses.gate import EventGate
from app.realtime.responses.generation import Generation
from app.realtime.responses.report import ResponseReport
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome, ResponseSpec


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
        ids = (self.id, self.item_id)
        self.gate = EventGate(deps.sink, held=spec.early_user_text is not None)
        conversation = deps.conversation if spec.in_conversation else None
        self.calls = FunctionCalls(self.id, spec.tools, conversation, self.gate.emit)
        self.generation = Generation(spec, deps, ids, self.gate.emit, self.calls, self._words)
        self.voice = (
            AnswerVoice(spec, deps, self.id, self._audio, lambda: self.generation.heard_language)
            if spec.audio
            else None
        )
        conversation_id = conversation.id if conversation is not None else None
        self.report = ResponseReport(ids, spec, conversation_id, self.gate.emit, self._voice_name)
        self.text = ""
        self.item = Item(
            id=self.item_id, role="assistant", text="", audio=spec.audio, status="in_progress"
        )
        self._done = False
        self._task: asyncio.Task[None] | None = None
        self._cancel_reason = "client_cancelled"

    @property
    def done(self) -> bool:
        return self._done

    @property
    def early_user_text(self) -> str | None:
        return self.spec.early_user_text

    @property
    def audio_ms(self) -> float:
        return self.voice.audio_ms if self.voice else 0.0

    @property
    def held(self) -> bool:
        """An early answer whose turn has not ended: the client has seen nothing of it."""
        return self.gate.holding

    @property
    def shown(self) -> bool:
        return not self.gate.holding and bool(self.text or self.audio_ms)

    def text_played(self, audio_end_ms: float) -> str:
        return self.voice.text_played(audio_end_ms) if self.voice else self.text

    def start(self) -> None:
        # announced now, so a response cancelled before its first step still reports
        self.report.opened(self.deps.conversation.last_id if self.spec.in_conversation else None)
        if not self.gate.holding:
            self._join_conversation()
        self._task = asyncio.create_task(self._run(), name=f"response-{self.id}")
        self._task.add_done_callback(self._finish_if_never_ran)

    def _finish_if_never_ran(self, _task: asyncio.Task[None]) -> None:
        if not self._done:  # cancelled before its first step: _run's finally never ran
            self._finish("cancelled", ending.cancelled(self._cancel_reason))

    async def cancel(self, reason: str = "client_cancelled") -> None:
        """Stop generating and speaking; `response.done` reports status `cancelled`.

        Returns once the response has finished. If the caller itself is cancelled while
        waiting, that cancellation propagates (it is not mistaken for the response's).
        """
        self._cancel_reason = reason
        if self.voice is not None:  # no more audio leaves, even before the task unwinds
            self.voice.stop()
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait([task])  # raises CancelledError only if *we* are cancelled

    @property
    def speaking(self) -> bool:
        """Its audio is still being produced (an audio answer not yet done)."""
        return self.voice is not None and not self._done

    @property
    def paused(self) -> bool:
        return self.voice is not None and self.voice.paused

    def pause(self) -> None:
        """Speech over the answer: send no more audio until `resume` or `cancel` (the LLM
        goes on writing meanwhile). A text answer has nothing to pause."""
        if self.voice is not None and not self._done:
            self.voice.pause()

    def pause_again(self) -> None:
        """The speech that paused it went on after it resumed: send no more audio, and go
        on later from what was sent (the client was not told to drop its queue again)."""
        if self.voice is not None and not self._done:
            self.voice.pause(rewind=False)

    def resume(self) -> None:
        """The speech was no interruption: the audio goes on from what the client heard."""
        if self.voice is not None:
            self.voice.resume()

    def truncate_paused(self, audio_end_ms: float) -> None:
        """The client truncated the paused answer (as clients do on speech_started): the
        item holds what it heard until the answer resumes (then it ends whole) or is
        cancelled (then it keeps that)."""
        if self.voice is not None:
            self.voice.heard_paused(audio_end_ms)
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

    def _join_conversation(self) -> None:
        """An item from its start (truncatable while it plays), unless out of band."""
        if self.spec.in_conversation:
            self.deps.conversation.add(self.item)

    def _voice_name(self) -> str | None:
        return self.voice.name if self.voice else None

    def _words(self, text: str) -> None:
        self.text += text
        self.report.words(text)

    def _audio(self, piece: bytes) -> None:
        self.report.audio(piece)

    async def _run(self) -> None:
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        voice = self.voice
        speaking = voice.run(clauses, self.gate.released) if voice else None
        status, details = "completed", None
        try:
            await self.generation.run(clauses)
            if self.generation.cut_by_length:
                status, details = "incomplete", ending.INCOMPLETE
            if speaking is not None:
                try:
                    await speaking
                except Exception as exc:  # the words stand: this answer is text only
                    self.gate.emit(ending.speech_failed(exc, self.id))
            await self.gate.released.wait()  # a held text answer waits for its turn to end
        except asyncio.CancelledError:
            status, details = "cancelled", ending.cancelled(self._cancel_reason)
            heard = voice.heard_text(self._cancel_reason == "turn_detected") if voice else None
            if heard is not None:
                self.text = heard
        except Exception as exc:  # every failure is reported; the session goes on
            error, details = ending.failure(exc, self.id, self.spec.event_id)
            self.gate.emit(error)
            status = "failed"
        finally:
            if speaking is not None and not speaking.done():
                speaking.cancel()
                await asyncio.wait([speaking])
            dropped = self.generation.dropped
            if dropped:  # after the answer, so that no voice turn waits for it
                self.deps.on_dropped(dropped, self.deps.llm)
            self._finish(status, details)

    def _finish(self, status: str, details: Wire | None) -> None:
        self._done = True
        visible = not (self._cancel_reason == "discarded" or self.gate.holding)
        if visible:
            self._report(status, details)
        seconds = self._stage_seconds() if visible else None
        reason = self._cancel_reason if visible and status == "cancelled" else None
        outcome = ResponseOutcome(
            status if visible else "discarded", visible, seconds, reason, self.spec.in_conversation
        )
        self._on_done(self, outcome)
        if seconds is not None:
            language = self.timing.language if self.timing else None
            metrics = TurnMetrics(
                response_id=self.id,
                stage_seconds=seconds,
                audio_ms=self.audio_ms,
                status=status,
                language=language,
            )
            self.gate.emit(metrics)

    def _stage_seconds(self) -> dict[str, float | None] | None:
        """A voice turn's latencies, end of speech to each stage; None for other answers."""
        if self.timing is None:
            return None
        speaker = self.voice.speaker if self.voice else None
        return self.timing.stage_seconds(
            first_token=self.generation.first_token_at,
            first_clause=self.generation.first_clause_at,
            first_synthesized=speaker.first_synthesized_at if speaker else None,
            first_audio=speaker.first_audio_at if speaker else None,
        )

    def _report(self, status: str, details: Wire | None) -> None:
        item_status = "completed" if status == "completed" else "incomplete"
        self.report.message_done(self.text, item_status)
        self.item.text, self.item.status = self.text, item_status
        if self.item in self.deps.conversation.items:  # not deleted meanwhile
            self.gate.emit(ItemDone(item=self.item.to_wire()))
        output = [self.report.item(item_status, self.text), *self.calls.wire_items()]
        self.report.done(status, output, details, self.generation.usage())
