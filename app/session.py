"""One conversation over one WebSocket: input audio -> VAD -> ASR -> LLM -> TTS -> output audio.

Events go out through a single queue (`outbox`) drained by one sender task, so the
order clients see is the order we emit. Stages run as cancellable asyncio tasks; the
control path (response.cancel, barge-in) cancels the response task, which aborts the
LLM request and stops TTS, then reports `response.done` with status `cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.audio import PIPELINE_RATE, StreamResampler, decode_audio
from app.components import Components
from app.llm.base import ChatMessage, LLMBackendError
from app.protocol import (
    AudioAppend,
    AudioClear,
    AudioCommit,
    ItemCreate,
    ProtocolError,
    ResponseCancel,
    ResponseCreate,
    SessionUpdate,
    decode_base64,
    error_event,
    new_id,
    parse_client_event,
)
from app.response import Response
from app.session_config import SessionConfig
from app.stages.vad import VADConfig, VADStream

log = logging.getLogger("r1voice.session")

MIN_COMMIT_MS = 100


@dataclass
class Item:
    """A conversation item: a user turn (typed or spoken) or an assistant answer."""

    id: str
    role: str
    text: str | None = None  # None until a spoken turn is transcribed
    ready: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class SpokenTurn:
    """The last VAD-committed turn, kept so a quick continuation can be merged into it."""

    item: Item
    audio: np.ndarray
    end_sample: int
    task: asyncio.Task[None]
    response: Response | None = None


@dataclass
class TurnTimes:
    """Monotonic timestamps of one voice turn (for the latency breakdown)."""

    speech_stopped: float | None = None
    transcript_done: float | None = None


class Session:
    """The state and behaviour of one Realtime conversation."""

    def __init__(self, components: Components) -> None:
        self.components = components
        self.id = new_id("sess")
        self.config = SessionConfig.default(components.settings)
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.items: list[Item] = []
        self._resampler = StreamResampler(self.config.input_format.rate, PIPELINE_RATE)
        self._vad = VADStream(components.vad, self._vad_config())
        self._audio: list[np.ndarray] = []  # uncommitted input, 16 kHz
        self._audio_start = 0  # stream position (16 kHz samples) of self._audio[0]
        self._audio_len = 0
        self._speech_start: int | None = None
        self._turn_tasks: set[asyncio.Task[None]] = set()
        self.response: Response | None = None
        self._last_turn: SpokenTurn | None = None
        self._pending_item_id: str | None = None
        self._carry: tuple[np.ndarray, int] | None = None

    # -- plumbing ---------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", new_id("event"))
        self.outbox.put_nowait(event)

    def emit_error(self, exc: ProtocolError, event_id: str | None = None) -> None:
        self.emit(error_event(exc.code, exc.message, param=exc.param, event_id=event_id))

    async def start(self) -> None:
        self.emit({"type": "session.created", "session": self.config.to_wire(self.id)})

    async def close(self) -> None:
        """Cancel everything this session started; frees LLM requests at once."""
        if self.response is not None:
            await self.response.cancel()
        for task in list(self._turn_tasks):
            task.cancel()
        for task in list(self._turn_tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.outbox.put_nowait(None)

    async def handle(self, raw: str | bytes) -> None:
        """Handle one client message; bad input becomes an `error` event, never an exception."""
        event_id = None
        try:
            event = parse_client_event(raw)
            event_id = event.event_id
            await self._dispatch(event)
        except ProtocolError as exc:
            self.emit_error(exc, event_id)

    async def _dispatch(self, event: Any) -> None:
        if isinstance(event, AudioAppend):
            await self._append_audio(event)
        elif isinstance(event, SessionUpdate):
            self._update_session(event)
        elif isinstance(event, AudioCommit):
            self._commit_manual()
        elif isinstance(event, AudioClear):
            self._clear_audio()
            self.emit({"type": "input_audio_buffer.cleared"})
        elif isinstance(event, ItemCreate):
            self._create_item(event)
        elif isinstance(event, ResponseCreate):
            self._start_response(event.response)
        elif isinstance(event, ResponseCancel):
            if self.response is None or self.response.done:
                raise ProtocolError("response_cancel_not_active", "there is no response to cancel")
            await self.response.cancel()

    # -- session config -----------------------------------------------------------------

    def _vad_config(self) -> VADConfig:
        td = self.config.turn_detection
        if td is None:
            return VADConfig()
        return VADConfig(td.threshold, td.prefix_padding_ms, td.silence_duration_ms)

    def _update_session(self, event: SessionUpdate) -> None:
        old_rate = self.config.input_format.rate
        self.config.apply(event.session)
        if self.config.input_format.rate != old_rate:
            self._resampler = StreamResampler(self.config.input_format.rate, PIPELINE_RATE)
        self._vad.config = self._vad_config()
        self.emit({"type": "session.updated", "session": self.config.to_wire(self.id)})

    # -- input audio --------------------------------------------------------------------

    async def _append_audio(self, event: AudioAppend) -> None:
        data = decode_base64(event.audio)
        fmt = self.config.input_format
        if fmt.type == "audio/pcm" and len(data) % 2:
            raise ProtocolError(
                "invalid_audio_format",
                f"PCM16 audio must have an even number of bytes, got {len(data)}; "
                "send little-endian 16-bit mono samples",
                param="audio",
            )
        samples = self._resampler.process(decode_audio(data, fmt.type))
        self._audio.append(samples)
        self._audio_len += samples.size
        if self.config.turn_detection is None or samples.size == 0:
            return
        for vad_event in await asyncio.to_thread(self._vad.process, samples):
            if vad_event.kind == "speech_started":
                await self._on_speech_started(vad_event.sample)
            else:
                self._on_speech_stopped(vad_event.sample)

    async def _on_speech_started(self, sample: int) -> None:
        self._speech_start = sample
        item_id = new_id("item")
        self._pending_item_id = item_id
        merge_window = self.components.settings.turn_merge_window_ms * PIPELINE_RATE // 1000
        last = self._last_turn
        if last is not None and sample - last.end_sample <= merge_window:
            await self._reopen_turn(last)
        self.emit(
            {
                "type": "input_audio_buffer.speech_started",
                "audio_start_ms": sample * 1000 // PIPELINE_RATE,
                "item_id": item_id,
            }
        )
        td = self.config.turn_detection
        if td is not None and td.interrupt_response and self.response and not self.response.done:
            await self.response.cancel("turn_detected")

    async def _reopen_turn(self, last: SpokenTurn) -> None:
        """The user resumed within the merge window: the pause was inside one utterance.

        Drop the previous turn (and any answer to it, so nobody answers half a sentence)
        and let the next commit transcribe both parts together. Whisper is also far more
        accurate on the whole sentence than on its fragments.
        """
        self._last_turn = None
        last.task.cancel()
        if self.response is not None and self.response is last.response:
            await self.response.cancel("turn_detected")
        index = next((i for i, it in enumerate(self.items) if it is last.item), None)
        if index is None:
            return
        for dropped in self.items[index:]:
            self.emit({"type": "conversation.item.deleted", "item_id": dropped.id})
        del self.items[index:]
        self._carry = (last.audio, last.end_sample)

    def _on_speech_stopped(self, sample: int) -> None:
        td = self.config.turn_detection
        assert td is not None
        item_id = self._pending_item_id or new_id("item")
        self.emit(
            {
                "type": "input_audio_buffer.speech_stopped",
                "audio_end_ms": sample * 1000 // PIPELINE_RATE,
                "item_id": item_id,
            }
        )
        start = (self._speech_start or 0) - td.prefix_padding_ms * PIPELINE_RATE // 1000
        carry = self._carry
        if carry is not None:  # a continued turn: the earlier part, the pause, then this part
            self._carry = None
            audio = np.concatenate([carry[0], self._take_audio(carry[1], sample)])
        else:
            audio = self._take_audio(start, sample)
        self._speech_start = None
        task = self._commit(
            audio, item_id, auto_respond=td.create_response, stopped_at=time.monotonic()
        )
        self._last_turn = SpokenTurn(self.items[-1], audio, sample, task)

    def _take_audio(self, start: int, end: int) -> np.ndarray:
        """Return input samples [start, end) (stream positions) and drop all before `end`."""
        buf = np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)
        lo = max(start - self._audio_start, 0)
        hi = max(min(end - self._audio_start, buf.size), lo)
        taken = buf[lo:hi].copy()
        rest = buf[hi:]
        self._audio = [rest] if rest.size else []
        self._audio_start += hi
        self._audio_len = rest.size
        return taken

    def _clear_audio(self) -> None:
        self._audio_start += self._audio_len
        self._audio, self._audio_len = [], 0

    def _commit_manual(self) -> None:
        ms = self._audio_len * 1000 // PIPELINE_RATE
        if ms < MIN_COMMIT_MS:
            raise ProtocolError(
                "input_audio_buffer_commit_empty",
                f"buffer too small: expected at least {MIN_COMMIT_MS} ms of audio, "
                f"but the buffer only has {ms} ms",
            )
        audio = self._take_audio(self._audio_start, self._audio_start + self._audio_len)
        self._vad.reset()
        self._speech_start = None
        self._last_turn = None
        self._commit(audio, new_id("item"), auto_respond=False, stopped_at=time.monotonic())

    def _commit(
        self, audio: np.ndarray, item_id: str, *, auto_respond: bool, stopped_at: float
    ) -> asyncio.Task[None]:
        previous = self.items[-1].id if self.items else None
        item = Item(id=item_id, role="user")
        self.items.append(item)
        self.emit(
            {
                "type": "input_audio_buffer.committed",
                "previous_item_id": previous,
                "item_id": item_id,
            }
        )
        self.emit(
            {
                "type": "conversation.item.created",
                "previous_item_id": previous,
                "item": {
                    "id": item_id,
                    "object": "realtime.item",
                    "type": "message",
                    "status": "completed",
                    "role": "user",
                    "content": [{"type": "input_audio", "transcript": None}],
                },
            }
        )
        task = asyncio.create_task(
            self._transcribe(item, audio, auto_respond, TurnTimes(stopped_at))
        )
        self._turn_tasks.add(task)
        task.add_done_callback(self._turn_tasks.discard)
        return task

    async def _transcribe(
        self, item: Item, audio: np.ndarray, auto_respond: bool, times: TurnTimes
    ) -> None:
        try:
            result = await asyncio.to_thread(self.components.asr.transcribe, audio)
            item.text = result.text
        except Exception as exc:  # a failed transcription must not end the session
            log.exception("transcription failed")
            item.text = ""
            self.emit(
                {
                    "type": "conversation.item.input_audio_transcription.failed",
                    "item_id": item.id,
                    "content_index": 0,
                    "error": {"type": "server_error", "code": "asr_failed", "message": str(exc)},
                }
            )
            return
        finally:
            item.ready.set()
        times.transcript_done = time.monotonic()
        self.emit(
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item.id,
                "content_index": 0,
                "transcript": item.text,
            }
        )
        # Nothing intelligible was said (silence, a cough): do not answer it.
        if auto_respond and item.text.strip():
            with contextlib.suppress(ProtocolError):
                self._start_response(None, times)
                if self._last_turn is not None and self._last_turn.item is item:
                    self._last_turn.response = self.response

    # -- conversation and responses ------------------------------------------------------

    def _create_item(self, event: ItemCreate) -> None:
        texts = [p.text or p.transcript or "" for p in event.item.content]
        if any(p.type in ("input_audio", "audio") and p.audio for p in event.item.content):
            raise ProtocolError(
                "unsupported_content",
                "audio content in conversation.item.create is not supported; stream it with "
                "input_audio_buffer.append instead",
                param="item.content",
            )
        item = Item(
            id=event.item.id or new_id("item"), role=event.item.role, text=" ".join(texts).strip()
        )
        item.ready.set()
        previous = self.items[-1].id if self.items else None
        self.items.append(item)
        self.emit(
            {
                "type": "conversation.item.created",
                "previous_item_id": previous,
                "item": {
                    "id": item.id,
                    "object": "realtime.item",
                    "type": "message",
                    "status": "completed",
                    "role": item.role,
                    "content": [p.model_dump(exclude_none=True) for p in event.item.content],
                },
            }
        )

    async def history(self) -> list[ChatMessage]:
        """The chat so far, waiting for spoken turns still being transcribed."""
        messages = [ChatMessage("system", self.config.instructions)]
        for item in list(self.items):
            await item.ready.wait()
            if item.text:
                messages.append(ChatMessage(item.role, item.text))
        return messages

    def _start_response(self, options: Any, times: TurnTimes | None = None) -> None:
        if self.response is not None and not self.response.done:
            raise ProtocolError(
                "conversation_already_has_active_response",
                f"response {self.response.id} is still in progress; cancel it first or wait "
                "for response.done",
            )
        self.response = Response(self, options, times)
        self.response.start()

    def add_assistant_item(self, item_id: str, text: str) -> None:
        item = Item(id=item_id, role="assistant", text=text)
        item.ready.set()
        self.items.append(item)

    def report_llm_error(self, exc: LLMBackendError) -> None:
        self.emit(
            error_event(
                exc.code,
                str(exc),
                kind="server_error" if exc.code != "llm_error" else "invalid_request_error",
            )
        )
