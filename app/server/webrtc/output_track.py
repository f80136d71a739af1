"""The call's outgoing audio: answers' PCM in, 20 ms frames out at real time, Opus on RTP.

aiortc's RTP sender calls `recv()` for each frame; the track slices the queued 24 kHz
bytes (960 a frame) and hands out each as an Opus packet, encoded on the default thread
pool by its own encoder (opus_packets.py: 4 ms less lookahead than aiortc's, no
resampling; a settled silence is its last packet again, not encoded); SRTP and the
pacing sleep run on the event loop, as aiortc does for every track. The pacing follows
aiortc's own AudioStreamTrack: frame n is due at start + n * 20 ms; with nothing queued
it sends silence, so the stream's timing never jumps.

An answer that arrives while the track sends silence does not wait for the next tick: the
silence's wait ends on its arrival and the clock restarts there (an answer's first frame
waited 10 ms on average, up to 20, for a tick set by the silence before it). Its RTP
timestamp still follows the last one, so the stream is then up to a frame ahead of its
timestamps; the silence after the answer gives that lead back 2 ms a frame, so the lead
stays under a frame however many answers there are.

The track knows what went out: each answer's piece carries its place on the answer's
timeline, so `played_ms` is exact, and `stop` drops the rest at once. It reports
`output_audio_buffer.started` when an answer's first frame goes out, `.stopped` when
its last has (after `finish_answer`), `.cleared` when it is stopped before that.

`hold` makes it send silence from the next frame and keep its queue: speech has just
begun over the answer and may be a barge-in, which stops the audio ~300 ms sooner than
waiting for the barge-in hold would; `release` goes on from the same sample when it was
a cough or our own echo, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from aiortc import MediaStreamTrack
from aiortc.mediastreams import MediaStreamError
from av import Packet

from app.audio import PROTOCOL_RATE, decode_audio, float_to_pcm16, resample
from app.protocol.server_events import (
    OutputAudioCleared,
    OutputAudioStarted,
    OutputAudioStopped,
)
from app.protocol.session_schema import AudioFormat
from app.realtime.handoff import EventSink
from app.server.webrtc.opus_packets import RTP_RATE, OpusPackets

FRAME_MS = 20
FRAME_SAMPLES = PROTOCOL_RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * 2
BYTES_PER_MS = PROTOCOL_RATE * 2 / 1000
FRAME_S = FRAME_MS / 1000
LEAD_RETURN_S = 0.002  # how much of its lead each silent frame gives back (see above)
RTP_FRAME = RTP_RATE * FRAME_MS // 1000  # a frame on Opus's RTP clock
KEPT_ANSWERS = 8  # answers whose played position is remembered (truncation asks soon after)


@dataclass
class _Piece:
    response_id: str
    data: bytes
    at_ms: float  # where it starts on its answer's timeline
    offset: int = 0  # bytes of it already sent


class TrackPlayout:
    """One answer's side of the track (app/realtime/responses/playback.py's Playout)."""

    def __init__(self, track: OutputTrack, response_id: str) -> None:
        self._track, self._id = track, response_id

    def play(self, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        self._track.play_answer(self._id, piece, fmt, at_ms)

    def played_ms(self) -> float | None:
        return self._track.answer_played_ms(self._id)

    def stop(self) -> None:
        self._track.stop_answer(self._id)

    def finish(self) -> None:
        self._track.finish_answer(self._id)


class OutputTrack(MediaStreamTrack):
    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queue: deque[_Piece] = deque()
        self._played: OrderedDict[str, float] = OrderedDict()  # answer -> ms played
        self._finished: set[str] = set()
        self._current: str | None = None  # the answer whose audio is out (started told)
        self._last: str | None = None  # the last answer that played, for `cleared`
        self._emit: EventSink = lambda _event: None
        self._start = 0.0  # when frame 0 of the clock was due
        self._started = False
        self._frames = 0  # frames since the clock (re)started
        self._sent = 0  # frames since the track started: the timestamps never go back
        self._held = False
        self._lead = 0.0  # seconds the frames went out ahead of their timestamps
        self._silence_wait: asyncio.Future[None] | None = None  # a silent wait, ended by audio
        self._opus = OpusPackets()

    # -- Playback (the session's side) ------------------------------------------------

    def attach(self, emit: EventSink) -> None:
        self._emit = emit

    def playout(self, response_id: str) -> TrackPlayout:
        return TrackPlayout(self, response_id)

    def hold(self) -> None:
        self._held = True

    def release(self) -> None:
        self._held = False
        self._wake()

    def clear(self) -> None:
        response_id = self._current or self._last
        self._queue.clear()
        self._current = None
        if response_id is not None:  # the event names an answer: none ever played, none said
            self._emit(OutputAudioCleared(response_id=response_id))

    # -- one answer's audio ----------------------------------------------------------

    def play_answer(self, response_id: str, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        if (fmt.type, fmt.rate) != (
            "audio/pcm",
            PROTOCOL_RATE,
        ):  # a session asked for another format
            piece = float_to_pcm16(resample(decode_audio(piece, fmt.type), fmt.rate, PROTOCOL_RATE))
        if piece:
            self._queue.append(_Piece(response_id, piece, at_ms))
            self._wake()

    def answer_played_ms(self, response_id: str) -> float | None:
        return self._played.get(response_id)

    def stop_answer(self, response_id: str) -> None:
        dropped = any(p.response_id == response_id for p in self._queue)
        self._queue = deque(p for p in self._queue if p.response_id != response_id)
        if self._current == response_id or dropped:
            self._current = None
            self._emit(OutputAudioCleared(response_id=response_id))

    def finish_answer(self, response_id: str) -> None:
        self._finished.add(response_id)
        self._stop_if_done()

    def _stop_if_done(self) -> None:
        current = self._current
        if current in self._finished and not any(p.response_id == current for p in self._queue):
            self._current = None
            self._finished.discard(current)
            self._emit(OutputAudioStopped(response_id=current))

    # -- the media track (aiortc's side) ----------------------------------------------

    async def recv(self) -> Packet:
        """The next 20 ms as an Opus packet, when it is due."""
        data = await self.next_pcm()
        timestamp = self._sent * RTP_FRAME
        self._sent += 1
        packet = self._opus.settled_silence(data, timestamp)
        if packet is None:
            loop = asyncio.get_running_loop()
            packet = await loop.run_in_executor(None, self._opus.encode, data, timestamp)
        return packet

    async def next_pcm(self) -> bytes:
        """The next 20 ms of the queue as 24 kHz PCM16 (silence where none), when it is
        due; what `recv` sends."""
        if self.readyState != "live":
            raise MediaStreamError
        now = time.monotonic()
        if not self._started:
            self._start, self._started = now, True
        else:
            due = self._start + self._frames * FRAME_S
            if due > now:
                await self._wait(due - now)
            elif now - due > 0.5:  # the loop stalled: restart the clock, do not burst
                self._start, self._frames, self._lead = now, 0, 0.0
        if self.readyState != "live":
            raise MediaStreamError
        self._frames += 1
        return self._take(FRAME_BYTES)

    def _silent(self) -> bool:
        """Whether the next frame would be silence as things stand."""
        return self._held or not self._queue

    async def _wait(self, seconds: float) -> None:
        """Wait for the next tick; while silent, only until an answer's audio comes (the
        clock then restarts there, within the lead a frame allows), and with a lead to
        give back, a little longer."""
        if not self._silent():
            await asyncio.sleep(seconds)
            return
        if self._lead > 0:
            back = min(self._lead, LEAD_RETURN_S)
            self._lead -= back
            self._start += back
            seconds += back
        self._silence_wait = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self._silence_wait, seconds)
        except TimeoutError:
            return
        finally:
            self._silence_wait = None
        due = self._start + self._frames * FRAME_S
        if not self._silent():  # not a release with nothing queued
            gained = min(due - time.monotonic(), FRAME_S - self._lead)
            if gained > 0:
                self._lead += gained
                self._start -= gained
                due -= gained
        await asyncio.sleep(max(0.0, due - time.monotonic()))

    def _wake(self) -> None:
        if self._silence_wait is not None and not self._silence_wait.done():
            self._silence_wait.set_result(None)

    def _take(self, size: int) -> bytes:
        """`size` bytes of the queued audio (silence where none), noting what played."""
        if self._held:
            return bytes(size)
        out = bytearray()
        while len(out) < size and self._queue:
            piece = self._queue[0]
            if self._current != piece.response_id:
                if self._current is not None:  # the one before ended without `finish`
                    self._emit(OutputAudioStopped(response_id=self._current))
                self._current = self._last = piece.response_id
                self._emit(OutputAudioStarted(response_id=self._current))
            taken = piece.data[piece.offset : piece.offset + size - len(out)]
            out += taken
            piece.offset += len(taken)
            self._note_played(piece.response_id, piece.at_ms + piece.offset / BYTES_PER_MS)
            if piece.offset >= len(piece.data):
                self._queue.popleft()
        self._stop_if_done()
        return bytes(out) + bytes(size - len(out))

    def _note_played(self, response_id: str, ms: float) -> None:
        self._played[response_id] = ms
        self._played.move_to_end(response_id)
        while len(self._played) > KEPT_ANSWERS:
            self._played.popitem(last=False)
