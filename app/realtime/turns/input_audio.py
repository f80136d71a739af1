"""A session's input audio: wire bytes -> 16 kHz samples in a buffer, and the VAD over them.

Positions are samples of the 16 kHz stream since the session began; the buffer and the
VAD count the same samples, so a VAD event's position addresses the buffer directly.
Decoding, resampling and VAD run on the VAD model's executor (never on the event loop),
and the size of an append is checked against the buffer's cap before any of that work.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from app.audio import PIPELINE_RATE, AudioBuffer, StreamResampler, decode_audio
from app.protocol.errors import ProtocolError
from app.protocol.parsing import decode_base64
from app.protocol.session_schema import AudioFormat, TurnDetection
from app.realtime.turns.vad_stream import VADConfig, VADEvent, VADStream
from app.speech.vad import FRAME, SileroModel

MAX_BUFFER_S = 15 * 60  # without VAD, a client must commit at least this often
MIN_COMMIT_MS = 100  # a manual commit of less is refused (the spec's error)
REAL_TIME_S = 0.5  # audio this far ahead of real time, at most, comes from a microphone


class SendPace:
    """How far a client's audio runs ahead of real time (a leaky bucket): about one
    append for a microphone, seconds for a client streaming a file or a test's burst.
    It may go below zero, down to -1 s: when the server itself was busy (appends waited
    unread, then come in a rush) the rush only pays back that wait; a client that sent
    nothing for a while banks no more than a second."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.ahead_s = 0.0
        self._last: float | None = None

    def received(self, seconds: float, at: float | None = None) -> None:
        """`seconds` of audio reached the server at `at` (default now): when it arrived,
        not when it was handled (see app/server/routes/inbox.py)."""
        now = self.clock() if at is None else at
        if self._last is not None:
            self.ahead_s = max(-1.0, self.ahead_s - (now - self._last))
        self._last = now
        self.ahead_s += seconds


def vad_config(turn_detection: TurnDetection | None) -> VADConfig:
    td = turn_detection
    return (
        VADConfig(td.threshold, td.prefix_padding_ms, td.silence_duration_ms) if td else VADConfig()
    )


class InputAudio:
    """What the turn coordinator asks of the audio is said here, in methods: the audio of a
    turn, where the audio heard ends, whether the user is speaking, a check of the latest
    window; the buffer and the VAD stay this class's own."""

    def __init__(
        self, vad_model: SileroModel, fmt: AudioFormat, turn_detection: TurnDetection | None
    ) -> None:
        self.vad_model = vad_model
        self.format = fmt
        self.buffer = AudioBuffer()
        config = vad_config(turn_detection)
        self.vad = VADStream(vad_model, config)
        self._set_detection(config, turn_detection is not None)
        self._resampler = StreamResampler(fmt.rate, PIPELINE_RATE)
        self.pace = SendPace()
        self.heard: Callable[[np.ndarray], None] | None = None  # each append's samples (recording)

    def _set_detection(self, config: VADConfig, vad_on: bool) -> None:
        self.vad.config = config
        self.vad_on = vad_on
        # samples kept before speech starts (none with VAD off)
        self._padding = config.prefix_padding_ms * PIPELINE_RATE // 1000 if vad_on else 0

    def reconfigure(self, fmt: AudioFormat, turn_detection: TurnDetection | None) -> None:
        if fmt.rate != self.format.rate:
            self._resampler = StreamResampler(fmt.rate, PIPELINE_RATE)
        self.format = fmt
        vad_on = turn_detection is not None
        if vad_on and not self.vad_on:  # the VAD saw none of the audio since it was off
            self.vad.reset(self.buffer.end)
        self._set_detection(vad_config(turn_detection), vad_on)

    async def append(self, audio_b64: str, arrived_at: float | None = None) -> list[VADEvent]:
        """Buffer one `input_audio_buffer.append` (that reached the server at `arrived_at`,
        for the client's pace); returns the VAD events it causes."""
        wire_bytes = len(audio_b64) * 3 // 4
        samples_16k = wire_bytes // (2 if self.format.type == "audio/pcm" else 1)
        samples_16k = samples_16k * PIPELINE_RATE // self.format.rate
        if self.buffer.size + samples_16k > MAX_BUFFER_S * PIPELINE_RATE:
            raise ProtocolError(
                "input_audio_buffer_full",
                f"the input audio buffer would exceed {MAX_BUFFER_S // 60} minutes; "
                "commit or clear it (or turn on server_vad), or send smaller appends",
                param="audio",
            )
        self.pace.received(samples_16k / PIPELINE_RATE, arrived_at)
        samples, events = await self.vad_model.executor.run(self._ingest, audio_b64, self.vad_on)
        self.buffer.append(samples)
        if self.heard is not None:
            self.heard(samples)
        return events

    def _ingest(self, audio_b64: str, detect: bool) -> tuple[np.ndarray, list[VADEvent]]:
        data = decode_base64(audio_b64)
        if self.format.type == "audio/pcm" and len(data) % 2:
            raise ProtocolError(
                "invalid_audio_format",
                f"PCM16 audio must have an even number of bytes, got {len(data)}; "
                "send little-endian 16-bit mono samples",
                param="audio",
            )
        samples = self._resampler.process(decode_audio(data, self.format.type))
        return samples, (self.vad.process(samples) if detect and samples.size else [])

    async def end_speech(self) -> None:
        """End the speech the VAD hears (on the VAD thread, after the appends before it)."""
        await self.vad_model.executor.run(self.vad.end_speech)

    async def end_pause_after(self, silence_start: int, ms: int) -> None:
        """End the speech if its pause that began at `silence_start` lasts `ms` (see
        VADStream.end_pause_after), on the VAD thread, after the appends before it."""
        await self.vad_model.executor.run(self.vad.end_pause_after, ms, silence_start)

    def clear(self) -> None:
        """Drop everything buffered; the VAD forgets speech in progress."""
        if self.buffer.size:  # AudioBuffer.view fails on a buffer that never had audio
            self.buffer.drop_before(self.buffer.end)
        self.vad.reset(self.buffer.end)

    def take_all(self) -> tuple[np.ndarray, int]:
        """The whole buffer (a manual commit) and the stream position where it ends."""
        end = self.buffer.end
        audio = self.buffer.view(self.buffer.start, end).copy()
        self.clear()
        return audio, end

    # -- what the turns ask -------------------------------------------------------------

    def end(self) -> int:
        """The stream position where the audio heard so far ends."""
        return self.buffer.end

    def check_committable(self) -> None:
        """Refuse a manual commit of a buffer shorter than MIN_COMMIT_MS."""
        ms = self.buffer.size * 1000 // PIPELINE_RATE
        if ms < MIN_COMMIT_MS:
            raise ProtocolError(
                "input_audio_buffer_commit_empty",
                f"buffer too small: expected at least {MIN_COMMIT_MS} ms of audio, "
                f"but the buffer only has {ms} ms",
            )

    def speaking(self) -> bool:
        """Whether the VAD hears speech now: in speech and not yet at a lull in it (a dip
        between syllables still counts). Before, the VAD's whole silence window counted:
        a 160 ms cough sent in real time was still "speech" 300 ms after it began, and
        passed the barge-in hold."""
        vad = self.vad
        return vad.speaking and vad.silence_samples * 1000 < vad.config.lull_ms * PIPELINE_RATE

    def silence(self) -> int:
        """Samples of silence the VAD has heard inside the speech now (0 while speech is
        heard, or outside speech)."""
        return self.vad.silence_samples

    def sends_in_real_time(self) -> bool:
        """Whether the client sends its audio as it is spoken (see semantic_end)."""
        return self.pace.ahead_s <= REAL_TIME_S

    def turn_audio(
        self,
        start: int,
        end: int | None = None,
        carry: tuple[np.ndarray, int] | None = None,
        tail: int = 0,
    ) -> np.ndarray:
        """The audio of a turn whose speech started at `start`, with the prefix padding
        before it, up to stream position `end` (None: all heard so far) and up to `tail`
        samples past it, as far as heard; a turn that continues an earlier one (`carry`:
        its audio and where it ended) begins with that audio."""
        until = self.buffer.end if end is None else max(min(self.buffer.end, end + tail), end)
        if carry is not None:
            earlier, earlier_end = carry
            return np.concatenate([earlier, self.buffer.view(earlier_end, until)])
        return self.buffer.view(start - self._padding, until)

    def take_turn(
        self, start: int, end: int, carry: tuple[np.ndarray, int] | None, tail: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """A turn ended at stream position `end`: its audio (see turn_audio) and up to
        `tail` samples of what was heard after it; what is buffered before `end` goes."""
        audio = self.turn_audio(start, end, carry)
        after = self.buffer.view(end, max(min(self.buffer.end, end + tail), end))
        self.buffer.drop_before(end)
        return audio, after

    def drop_before(self, position: int) -> None:
        """Forget the audio before stream `position` (a turn took it, or it was no turn)."""
        self.buffer.drop_before(position)

    def keep_recent(self, reach_back: int) -> None:
        """Between VAD turns, forget what the next turn cannot use: one that continues the
        last reaches `reach_back` samples back, a new one its prefix padding."""
        if not self.vad_on:  # without VAD the client commits all it sent
            return
        keep = reach_back + self._padding + FRAME
        if self.buffer.size > 2 * keep:
            self.buffer.drop_before(self.buffer.end - keep)

    async def check_recent(self, samples: int, check: Callable[[np.ndarray], bool]) -> bool:
        """`check` of the last `samples` heard (the echo check), run on the VAD's thread."""
        buffer = self.buffer
        window = buffer.view(max(buffer.end - samples, buffer.start), buffer.end)
        return await self.vad_model.executor.run(check, window)
