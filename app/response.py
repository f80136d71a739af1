"""One assistant response: LLM text streamed out, cut into clauses, spoken by TTS.

The LLM producer and the TTS consumer run concurrently (a queue of clauses between
them), so the first clause is being spoken while the model still writes the rest.
Cancelling the response task aborts the LLM request and stops TTS at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from app.audio import encode_audio
from app.llm.base import GenerationParams, LLMBackendError
from app.protocol import encode_base64, new_id
from app.stages.tts import ClauseChunker

if TYPE_CHECKING:
    from app.session import Session, TurnTimes

AUDIO_CHUNK_MS = 100  # size of each response.audio.delta


class Response:
    """Runs and reports one response; `cancel()` is the urgent control path."""

    def __init__(self, session: Session, options: Any, times: TurnTimes | None) -> None:
        self.session = session
        self.id = new_id("resp")
        self.item_id = new_id("item")
        cfg = session.config
        modalities = (
            options and (options.output_modalities or options.modalities)
        ) or cfg.modalities
        self.audio = "audio" in modalities
        self.instructions = (options and options.instructions) or None
        limit = options and (options.max_output_tokens or options.max_response_output_tokens)
        self.params = GenerationParams(
            max_tokens=cfg.max_output_tokens if limit in (None, "inf") else int(limit),
            temperature=cfg.temperature
            if options is None or options.temperature is None
            else options.temperature,
        )
        self.times = times
        self.text = ""
        self.audio_ms = 0.0
        self.status = "in_progress"
        self.first_token_at: float | None = None
        self.first_audio_at: float | None = None
        self.done = False
        self._task: asyncio.Task[None] | None = None
        self._cancel_reason = "client_cancelled"

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def cancel(self, reason: str = "client_cancelled") -> None:
        """Stop generating and speaking; `response.done` reports status `cancelled`."""
        self._cancel_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # -- the run ------------------------------------------------------------------------

    def _emit(self, event_type: str, **fields: Any) -> None:
        self.session.emit({"type": event_type, "response_id": self.id, **fields})

    def _item(self, status: str) -> dict[str, Any]:
        part: dict[str, Any] = (
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
        previous = session.items[-1].id if session.items else None
        session.emit(
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
        session.emit(
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
        speaker = asyncio.create_task(self._speak(clauses)) if self.audio else None
        status: str = "completed"
        details: dict[str, Any] | None = None
        try:
            await self._generate(clauses)
            if speaker is not None:
                await speaker
        except asyncio.CancelledError:
            status, details = "cancelled", {"type": "cancelled", "reason": self._cancel_reason}
        except LLMBackendError as exc:
            session.report_llm_error(exc)
            status, details = (
                "failed",
                {"type": "failed", "error": {"code": exc.code, "message": str(exc)}},
            )
        finally:
            if speaker is not None and not speaker.done():
                speaker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await speaker
            self._finish(status, details)

    async def _generate(self, clauses: asyncio.Queue[str | None]) -> None:
        messages = await self.session.history()
        if self.instructions:
            messages[0] = type(messages[0])("system", self.instructions)
        chunker = ClauseChunker()
        delta_type = "response.audio_transcript.delta" if self.audio else "response.text.delta"
        stream = self.session.components.llm.stream_chat(messages, self.params, self.id)
        async with contextlib.aclosing(stream):  # abort the LLM request even if cancelled here
            async for delta in stream:
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
                self.text += delta
                self._emit(
                    delta_type, item_id=self.item_id, output_index=0, content_index=0, delta=delta
                )
                for clause in chunker.push(delta):
                    clauses.put_nowait(clause)
        for clause in chunker.flush():
            clauses.put_nowait(clause)
        clauses.put_nowait(None)

    async def _speak(self, clauses: asyncio.Queue[str | None]) -> None:
        cfg = self.session.config
        fmt = cfg.output_format
        tts = self.session.components.tts
        bytes_per_ms = fmt.rate / 1000 * (2 if fmt.type == "audio/pcm" else 1)
        chunk = int(AUDIO_CHUNK_MS * bytes_per_ms) // 2 * 2
        while (clause := await clauses.get()) is not None:
            samples = await asyncio.to_thread(tts.synthesize, clause, fmt.rate, cfg.speed)
            data = encode_audio(samples, fmt.type)
            for offset in range(0, len(data), chunk):
                piece = data[offset : offset + chunk]
                if self.first_audio_at is None:
                    self.first_audio_at = time.monotonic()
                self._emit(
                    "response.audio.delta",
                    item_id=self.item_id,
                    output_index=0,
                    content_index=0,
                    delta=encode_base64(piece),
                )
                self.audio_ms += len(piece) / bytes_per_ms

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
        if self.text:
            self.session.add_assistant_item(self.item_id, self.text)
        self.session.emit(
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
        self._emit_metrics()

    def _emit_metrics(self) -> None:
        """Our extension event: the latency breakdown of this turn (milliseconds)."""
        t = self.times
        if t is None or t.speech_stopped is None:
            return

        def since(mark: float | None) -> float | None:
            return None if mark is None else round((mark - t.speech_stopped) * 1000, 1)  # type: ignore[operator]

        self.session.emit(
            {
                "type": "r1voice.turn.metrics",
                "response_id": self.id,
                "speech_stopped_to_transcript_ms": since(t.transcript_done),
                "speech_stopped_to_first_token_ms": since(self.first_token_at),
                "speech_stopped_to_first_audio_ms": since(self.first_audio_at),
                "audio_ms": round(self.audio_ms, 1),
                "status": self.status,
            }
        )
