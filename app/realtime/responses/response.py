"""One assistant response: LLM text streamed out, cut into clauses, spoken by TTS.

The LLM producer and the TTS consumer run concurrently (a queue of clauses between
them), so the first clause is spoken while the model still writes the rest. R1
reasoning (`<think>`) goes out as `r1voice.reasoning.delta` and is never spoken.
Audio is sent at real-time pace a little ahead of playback (`audio_lead_ms`), so a
barge-in leaves little queued. Cancelling aborts the LLM request and stops TTS at once;
after a barge-in only what was played stays in the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from app.llm import ChatMessage, GenerationParams, LLMBackendError
from app.llm.reasoning import ThinkSplitter
from app.models.piper_tts import ClauseChunker
from app.protocol.schemas import encode_base64, new_id
from app.realtime.responses.speaker import Speaker

if TYPE_CHECKING:
    from app.realtime.session import Session
    from app.realtime.turns.coordinator import CommittedTurn


class Response:
    """Runs and reports one response; `cancel()` is the urgent control path."""

    def __init__(
        self,
        session: Session,
        options: Any,
        turn: CommittedTurn | None,
        held_user_text: str | None = None,
    ) -> None:
        self.session = session
        # A speculative response (started during the silence window on the early
        # transcript) buffers its events until `release()`; nothing is heard before.
        self.held_user_text = held_user_text
        self._held: list[dict[str, Any]] | None = [] if held_user_text is not None else None
        self._released = asyncio.Event()
        if held_user_text is None:
            self._released.set()
        self.discarded = False
        self.id = new_id("resp")
        self.item_id = new_id("item")
        cfg = session.config
        modalities = (
            options and (options.output_modalities or options.modalities)
        ) or cfg.modalities
        self.audio = "audio" in modalities
        self.instructions = (options and options.instructions) or cfg.instructions
        limit = options and (options.max_output_tokens or options.max_response_output_tokens)
        temperature = options.temperature if options and options.temperature is not None else None
        self.params = GenerationParams(
            max_tokens=cfg.max_output_tokens if limit in (None, "inf") else int(limit),
            temperature=cfg.temperature if temperature is None else temperature,
            priority=cfg.priority,
        )
        self.turn = turn
        self.text = ""
        self.reasoning = ""
        self.status = "in_progress"
        self.first_token_at: float | None = None
        self.done = False
        self._task: asyncio.Task[None] | None = None
        self._cancel_reason = "client_cancelled"
        self.speaker = (
            Speaker(
                session.components.tts,
                cfg.voice,
                cfg.speed,
                cfg.output_format,
                session.components.settings.audio_lead_ms,
                self._send_audio,
            )
            if self.audio
            else None
        )

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def cancel(self, reason: str = "client_cancelled") -> None:
        """Stop generating and speaking; `response.done` reports status `cancelled`."""
        self._cancel_reason = reason
        if self.speaker is not None:  # no more audio leaves, even before the task unwinds
            self.speaker.muted = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def audio_ms(self) -> float:
        return self.speaker.audio_ms if self.speaker else 0.0

    @property
    def first_audio_at(self) -> float | None:
        return self.speaker.first_audio_at if self.speaker else None

    def text_played(self, audio_end_ms: float) -> str:
        return self.speaker.text_played(audio_end_ms) if self.speaker else self.text

    # -- the run ------------------------------------------------------------------------

    def _emit(self, event_type: str, **fields: Any) -> None:
        self._out({"type": event_type, "response_id": self.id, **fields})

    def _out(self, event: dict[str, Any]) -> None:
        if self._held is not None:
            self._held.append(event)
        else:
            self.session.emit(event)

    def release(self, turn: CommittedTurn) -> None:
        """The turn really ended: send what a held (speculative) response has so far."""
        held, self._held = self._held or [], None
        self.turn = turn
        for event in held:
            if event["type"] == "conversation.item.created":
                event["previous_item_id"] = turn.item.id
            self.session.emit(event)
        self._released.set()

    async def discard(self) -> None:
        """Speech resumed: drop a held response without the client ever seeing it."""
        self.discarded = True
        await self.cancel("discarded")

    def _item(self, status: str) -> dict[str, Any]:
        part = (
            {"type": "audio", "transcript": self.text}
            if self.audio
            else {"type": "text", "text": self.text}
        )
        return {
            "id": self.item_id,
            "object": "realtime.item",
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [part] if status != "in_progress" else [],
        }

    async def _run(self) -> None:
        session = self.session
        previous = session.conversation.last_id
        self._out(
            {
                "type": "response.created",
                "response": {
                    "id": self.id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "output": [],
                },
            }
        )
        self._emit("response.output_item.added", output_index=0, item=self._item("in_progress"))
        self._out(
            {
                "type": "conversation.item.created",
                "previous_item_id": previous,
                "item": self._item("in_progress"),
            }
        )
        part = {"type": "audio", "transcript": ""} if self.audio else {"type": "text", "text": ""}
        self._emit(
            "response.content_part.added",
            item_id=self.item_id,
            output_index=0,
            content_index=0,
            part=part,
        )
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        speaker = (
            asyncio.create_task(self.speaker.run(clauses, self._released)) if self.speaker else None
        )
        status: str = "completed"
        details: dict[str, Any] | None = None
        try:
            await self._generate(clauses)
            if speaker is not None:
                await speaker
        except asyncio.CancelledError:
            status, details = "cancelled", {"type": "cancelled", "reason": self._cancel_reason}
            if self._cancel_reason == "turn_detected" and self.speaker is not None:
                self.text = self.speaker.text_played(self.speaker.played_ms())  # what was heard
        except LLMBackendError as exc:
            session.report_llm_error(exc)
            status, details = (
                "failed",
                {"type": "failed", "error": {"code": exc.code, "message": str(exc)}},
            )
        except RuntimeError as exc:  # a TTS voice failed (e.g. espeak-ng missing)
            self._out(
                {
                    "type": "error",
                    "error": {"type": "server_error", "code": "tts_failed", "message": str(exc)},
                }
            )
            status, details = (
                "failed",
                {"type": "failed", "error": {"code": "tts_failed", "message": str(exc)}},
            )
        finally:
            if speaker is not None and not speaker.done():
                speaker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await speaker
            self._finish(status, details)

    async def _generate(self, clauses: asyncio.Queue[str | None]) -> None:
        llm = self.session.components.llm
        messages = await self.session.conversation.history(self.instructions)
        if self.held_user_text is not None:
            messages.append(ChatMessage("user", self.held_user_text))
        splitter = ThinkSplitter(starts_in_reasoning=llm.prompt_opens_reasoning(messages))
        chunker = ClauseChunker()
        delta_type = "response.audio_transcript.delta" if self.audio else "response.text.delta"
        stream = llm.stream_chat(messages, self.params, self.id)
        async with contextlib.aclosing(stream):  # abort the LLM request even if cancelled here
            async for delta in stream:
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
                for kind, text in splitter.push(delta):
                    self._route(kind, text, delta_type, chunker, clauses)
        for kind, text in splitter.flush():
            self._route(kind, text, delta_type, chunker, clauses)
        for clause in chunker.flush():
            clauses.put_nowait(clause)
        clauses.put_nowait(None)

    def _route(
        self,
        kind: str,
        text: str,
        delta_type: str,
        chunker: ClauseChunker,
        clauses: asyncio.Queue[str | None],
    ) -> None:
        if kind == "reasoning":
            self.reasoning += text
            self._emit("r1voice.reasoning.delta", item_id=self.item_id, delta=text)
            return
        self.text += text
        self._emit(delta_type, item_id=self.item_id, output_index=0, content_index=0, delta=text)
        for clause in chunker.push(text):
            clauses.put_nowait(clause)

    def _send_audio(self, piece: bytes) -> None:
        self._emit(
            "response.audio.delta",
            item_id=self.item_id,
            output_index=0,
            content_index=0,
            delta=encode_base64(piece),
        )

    def _finish(self, status: str, details: dict[str, Any] | None) -> None:
        self.status = status
        self.done = True
        common = {"item_id": self.item_id, "output_index": 0, "content_index": 0}
        if self.audio:
            self._emit("response.audio.done", **common)
            self._emit("response.audio_transcript.done", transcript=self.text, **common)
            part = {"type": "audio", "transcript": self.text}
        else:
            self._emit("response.text.done", text=self.text, **common)
            part = {"type": "text", "text": self.text}
        self._emit("response.content_part.done", part=part, **common)
        item_status = "completed" if status == "completed" else "incomplete"
        self._emit("response.output_item.done", output_index=0, item=self._item(item_status))
        if self.discarded or self._held is not None:  # never heard: leaves no trace
            return
        if self.text:
            self.session.add_assistant_item(self)
        self._out(
            {
                "type": "response.done",
                "response": {
                    "id": self.id,
                    "object": "realtime.response",
                    "status": status,
                    "status_details": details,
                    "output": [self._item(item_status)],
                    "usage": None,
                },
            }
        )
        self.session.metrics.responses.labels(status=status).inc()
        self._report_latency()

    def _report_latency(self) -> None:
        """The latency breakdown of a voice turn: to Prometheus and to the client."""
        turn = self.turn
        if turn is None:
            return
        stages = {
            "transcript": turn.transcript_at,
            "first_token": self.first_token_at,
            "first_audio": self.first_audio_at,
        }
        seconds = {k: None if v is None else v - turn.speech_stopped_at for k, v in stages.items()}
        self.session.metrics.observe_turn(seconds)
        self._out(
            {
                "type": "r1voice.turn.metrics",
                "response_id": self.id,
                **{
                    f"speech_stopped_to_{k}_ms": None if v is None else round(v * 1000, 1)
                    for k, v in seconds.items()
                },
                "audio_ms": round(self.audio_ms, 1),
                "status": self.status,
            }
        )
