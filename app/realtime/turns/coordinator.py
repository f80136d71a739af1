"""Input audio and turn taking for one session: buffer, VAD, barge-in, turn commits.

- Barge-in: speech while an answer is playing must last `barge_in_hold_ms` (300 ms by
  default) before it counts, so a cough or the speaker's own echo does not cut the
  answer. Until then `speech_started` is not sent (clients flush playback on it).
- Continued turns: speech resuming within `turn_merge_window_ms` of the end of the
  previous spoken turn continues it: the earlier turn and any answer to it are deleted
  and the whole utterance is transcribed again, so nobody answers half a sentence.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from app.audio import PIPELINE_RATE, AudioBuffer, StreamResampler, decode_audio
from app.models.vad import FRAME, VADConfig, VADEvent, VADStream
from app.protocol.schemas import ProtocolError, decode_base64, new_id
from app.realtime.conversation import Item
from app.realtime.turns.transcriber import TurnTranscriber

if TYPE_CHECKING:
    from app.realtime.responses.response import Response
    from app.realtime.session import Session

log = logging.getLogger("r1voice.session")
MIN_COMMIT_MS = 100
MAX_BUFFER_S = 15 * 60  # without VAD, a client must commit at least this often


@dataclass
class SpeechTurn:
    """The turn being spoken right now."""

    item_id: str
    start: int  # stream position (16 kHz samples) where speech started
    transcriber: TurnTranscriber
    confirmed: bool = False  # past the barge-in hold, announced with speech_started
    carry: tuple[np.ndarray, int] | None = None  # a continued turn: (earlier audio, its end)
    held: Response | None = None  # answer started on the early transcript, not yet heard


@dataclass
class CommittedTurn:
    """A committed spoken turn; kept so a quick continuation can reopen it."""

    item: Item
    audio: np.ndarray
    end_sample: int
    speech_stopped_at: float  # monotonic time, for the latency breakdown
    transcript_at: float | None = None
    task: asyncio.Task[None] | None = None
    response: Response | None = None
    vad: bool = True
    transcriber: TurnTranscriber | None = None
    held: Response | None = None


class InputTurns:
    def __init__(self, session: Session) -> None:
        self.session = session
        settings = session.components.settings
        self.hold = settings.barge_in_hold_ms * PIPELINE_RATE // 1000
        self.merge_window = settings.turn_merge_window_ms * PIPELINE_RATE // 1000
        self.buffer = AudioBuffer()
        self.turn: SpeechTurn | None = None
        self.last: CommittedTurn | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._resampler = StreamResampler(session.config.input_format.rate, PIPELINE_RATE)
        self._vad = VADStream(session.components.vad, self._vad_config())

    def _vad_config(self) -> VADConfig:
        td = self.session.config.turn_detection
        return (
            VADConfig(td.threshold, td.prefix_padding_ms, td.silence_duration_ms)
            if td
            else VADConfig()
        )

    def reconfigure(self) -> None:
        if self._resampler.from_rate != self.session.config.input_format.rate:
            self._resampler = StreamResampler(self.session.config.input_format.rate, PIPELINE_RATE)
        self._vad.config = self._vad_config()

    # -- audio in -----------------------------------------------------------------------

    async def append(self, audio_b64: str) -> None:
        data = decode_base64(audio_b64)
        fmt = self.session.config.input_format
        if fmt.type == "audio/pcm" and len(data) % 2:
            raise ProtocolError(
                "invalid_audio_format",
                f"PCM16 audio must have an even number of bytes, got {len(data)}; "
                "send little-endian 16-bit mono samples",
                param="audio",
            )
        samples = self._resampler.process(decode_audio(data, fmt.type))
        if self.buffer.size + samples.size > MAX_BUFFER_S * PIPELINE_RATE:
            raise ProtocolError(
                "input_audio_buffer_full",
                f"the input audio buffer holds {MAX_BUFFER_S // 60} minutes already; "
                "commit or clear it (or turn on server_vad)",
            )
        self.buffer.append(samples)
        if self.session.config.turn_detection is None or samples.size == 0:
            return
        for event in await asyncio.to_thread(self._vad.process, samples):
            await self._on_vad(event)
        turn = self.turn
        if (
            turn
            and not turn.confirmed
            and self._vad.speaking
            and self.buffer.end - turn.start >= self.hold
        ):
            await self._confirm(turn)
        if self.turn is None:  # between turns keep only what a new or continued turn can use
            td = self.session.config.turn_detection
            padding = (td.prefix_padding_ms if td else 0) * PIPELINE_RATE // 1000
            keep = self.merge_window + padding + FRAME
            if self.buffer.size > 2 * keep:
                self.buffer.drop_before(self.buffer.end - keep)

    async def _on_vad(self, event: VADEvent) -> None:
        turn = self.turn
        if event.kind == "speech_started":
            self.turn = SpeechTurn(
                new_id("item"),
                event.sample,
                TurnTranscriber(self.session.components.asr, lambda _d: None),
            )
            self.turn.transcriber.on_delta = self._delta_sender(self.turn.item_id)
            near_last = (
                self.last is not None and event.sample - self.last.end_sample <= self.merge_window
            )
            if not (self.session.responding or near_last):
                await self._confirm(self.turn)
        elif turn is None:
            return
        elif event.kind == "speech_paused" and turn.confirmed:
            early = turn.transcriber.speculate(self._turn_audio(turn, event.sample), event.sample)
            early.add_done_callback(lambda task: self._answer_early(turn, task))
        elif event.kind == "speech_resumed":
            turn.transcriber.resume()
            await self._drop_held(turn)
        elif event.kind == "speech_stopped":
            await self._on_stopped(turn, event.sample)

    def _answer_early(self, turn: SpeechTurn, early: asyncio.Task[str]) -> None:
        """Start a held answer on the early transcript while the silence window runs."""
        td = self.session.config.turn_detection
        if early.cancelled() or early.exception() is not None or self.turn is not turn:
            return
        text = early.result().strip()
        if (
            not (td and td.create_response and text and turn.transcriber.paused)
            or self.session.responding
        ):
            return
        turn.held = self.session.start_response(None, None, held_user_text=text)
        log.debug("answering early (held) on %r", text)

    async def _drop_held(self, turn: SpeechTurn) -> None:
        if turn.held is not None:
            held, turn.held = turn.held, None
            await held.discard()

    def _delta_sender(self, item_id: str):  # type: ignore[no-untyped-def]
        def send(delta: str) -> None:
            self.session.emit(
                {
                    "type": "conversation.item.input_audio_transcription.delta",
                    "item_id": item_id,
                    "content_index": 0,
                    "delta": delta,
                }
            )

        return send

    async def _confirm(self, turn: SpeechTurn) -> None:
        """Speech that counts: continue the last turn or interrupt the answer, announce it."""
        turn.confirmed = True
        # Announce first: clients stop playback on speech_started, before anything else.
        self.session.emit(
            {
                "type": "input_audio_buffer.speech_started",
                "audio_start_ms": turn.start * 1000 // PIPELINE_RATE,
                "item_id": turn.item_id,
            }
        )
        last = self.last
        if last is not None and last.vad and turn.start - last.end_sample <= self.merge_window:
            await self._reopen(last)
            turn.carry = (last.audio, last.end_sample)
            if last.transcriber is not None:  # the words agreed so far still stand
                turn.transcriber.agreement = last.transcriber.agreement
        td = self.session.config.turn_detection
        response = self.session.response
        if td is not None and td.interrupt_response and response is not None and not response.done:
            await response.cancel("turn_detected")
        if turn.transcriber.agreement.confirmed:  # the new item restates the inherited words
            turn.transcriber.on_delta(turn.transcriber.agreement.text)
        turn.transcriber.start(lambda: self._turn_audio(turn, self.buffer.end))

    async def _reopen(self, last: CommittedTurn) -> None:
        self.last = None
        if last.task is not None:
            last.task.cancel()
        if last.held is not None:
            await last.held.discard()
        if last.response is not None and not last.response.done:
            await last.response.cancel("turn_detected")
        for removed in self.session.conversation.delete_from(last.item):
            self.session.emit({"type": "conversation.item.deleted", "item_id": removed.id})

    async def _on_stopped(self, turn: SpeechTurn, sample: int) -> None:
        self.turn = None
        if not turn.confirmed:
            if self.session.responding:  # a cough or echo during the answer: ignore it
                await turn.transcriber.close()
                self.buffer.drop_before(sample)
                return
            await self._confirm(turn)
        self.session.emit(
            {
                "type": "input_audio_buffer.speech_stopped",
                "audio_end_ms": sample * 1000 // PIPELINE_RATE,
                "item_id": turn.item_id,
            }
        )
        audio = self._turn_audio(turn, sample)
        self.buffer.drop_before(sample)
        td = self.session.config.turn_detection
        auto = td.create_response if td else False
        self._commit(
            audio,
            turn.item_id,
            turn.transcriber,
            sample,
            auto_respond=auto,
            vad=True,
            held=turn.held,
        )

    def _turn_audio(self, turn: SpeechTurn, end: int) -> np.ndarray:
        if turn.carry is not None:
            earlier, earlier_end = turn.carry
            return np.concatenate([earlier, self.buffer.view(earlier_end, end)])
        td = self.session.config.turn_detection
        padding = (td.prefix_padding_ms if td else 0) * PIPELINE_RATE // 1000
        return self.buffer.view(turn.start - padding, end)

    # -- commits ------------------------------------------------------------------------

    def commit_manual(self) -> None:
        ms = self.buffer.size * 1000 // PIPELINE_RATE
        if ms < MIN_COMMIT_MS:
            raise ProtocolError(
                "input_audio_buffer_commit_empty",
                f"buffer too small: expected at least {MIN_COMMIT_MS} ms of audio, "
                f"but the buffer only has {ms} ms",
            )
        audio = self.buffer.view(self.buffer.start, self.buffer.end).copy()
        end = self.buffer.end
        self.buffer.drop_before(end)
        self._drop_turn()
        transcriber = TurnTranscriber(self.session.components.asr, lambda _d: None)
        self._commit(audio, new_id("item"), transcriber, end, auto_respond=False, vad=False)

    def clear(self) -> None:
        self.buffer.drop_before(self.buffer.end)
        self._drop_turn()

    def _drop_turn(self) -> None:
        if self.turn is not None:
            task = asyncio.create_task(self.turn.transcriber.close())
            self._track(task)
        self.turn = None
        self._vad.reset()

    def _commit(
        self,
        audio: np.ndarray,
        item_id: str,
        transcriber: TurnTranscriber,
        end: int,
        *,
        auto_respond: bool,
        vad: bool,
        held: Response | None = None,
    ) -> None:
        item = Item(id=item_id, role="user", audio=True)
        previous = self.session.conversation.add(item)
        self.session.emit(
            {
                "type": "input_audio_buffer.committed",
                "previous_item_id": previous,
                "item_id": item_id,
            }
        )
        self.session.emit(
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
        committed = CommittedTurn(
            item, audio, end, time.monotonic(), vad=vad, transcriber=transcriber, held=held
        )
        committed.task = asyncio.create_task(self._transcribe(committed, transcriber, auto_respond))
        self._track(committed.task)
        self.last = committed

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _transcribe(
        self, turn: CommittedTurn, transcriber: TurnTranscriber, auto_respond: bool
    ) -> None:
        item = turn.item
        try:
            item.text = await transcriber.finish(turn.audio, turn.end_sample)
        except asyncio.CancelledError:
            item.text = ""
            raise
        except Exception as exc:  # a failed transcription must not end the session
            log.exception("transcription failed")
            item.text = ""
            self.session.emit(
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
        turn.transcript_at = time.monotonic()
        self.session.emit(
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item.id,
                "content_index": 0,
                "transcript": item.text,
            }
        )
        held, turn.held = turn.held, None
        if held is not None and not held.done and held.held_user_text == item.text.strip():
            held.release(turn)  # the early answer was to exactly this: let it be heard
            turn.response = held
            return
        if held is not None:
            await held.discard()
        # Nothing intelligible was said (silence, a cough): do not answer it.
        if auto_respond and item.text.strip():
            with contextlib.suppress(ProtocolError):
                turn.response = self.session.start_response(None, turn)

    async def close(self) -> None:
        if self.turn is not None:
            await self.turn.transcriber.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
