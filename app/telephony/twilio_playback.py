"""Answers' audio on a Twilio media stream: 20 ms mu-law `media` frames at real time, a
`mark` after each answer, `clear` when speech over it holds or stops it.

The session's `Playback` (app/realtime/responses/playback.py), as the WebRTC track is:
the server sends the call's audio itself, so it knows what went out. Twilio plays each
frame as it arrives, after the ones before it; frames go out `LEAD_S` ahead of their
turn, so a late packet does not leave a gap, and what has played by now is what was due
by now. A `mark` follows an answer's last frame: Twilio echoes it once everything before
it has played, the answer's sure end (`output_audio_buffer.stopped`). `clear` empties
Twilio's buffer, and it then echoes the marks it held: those say nothing was played.

`hold` (speech has begun over the answer) clears at once and takes the frames Twilio had
not played yet back into the queue, so a `release` (a cough, our own echo) plays on from
the same sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.audio import decode_audio, encode_audio, resample
from app.protocol.server_events import OutputAudioCleared, OutputAudioStarted, OutputAudioStopped
from app.protocol.session_schema import AudioFormat
from app.realtime.handoff import EventSink
from app.telephony import twilio_messages
from app.telephony.twilio_messages import FRAME_BYTES

log = logging.getLogger("r1voice.telephony")

RATE = 8000
FRAME_S = 0.02
BYTES_PER_MS = RATE / 1000  # mu-law: a byte a sample
LEAD_S = 0.1  # frames sent ahead of their turn: the network's jitter, not a barge-in's cost
SILENCE = b"\xff"  # mu-law's zero
KEPT_ANSWERS = 8  # answers whose played position is remembered (truncation asks soon after)


@dataclass
class _Piece:
    response_id: str
    data: bytes  # mu-law
    at_ms: float  # where it starts on its answer's timeline


@dataclass
class _Sent:
    """A frame out, and when Twilio plays it."""

    response_id: str
    data: bytes
    at_ms: float
    plays_at: float


class TwilioPlayout:
    """One answer's side of the stream (the session's Playout)."""

    def __init__(self, playback: TwilioPlayback, response_id: str) -> None:
        self._playback, self._id = playback, response_id

    def play(self, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        self._playback.play_answer(self._id, piece, fmt, at_ms)

    def played_ms(self) -> float | None:
        return self._playback.answer_played_ms(self._id)

    def stop(self) -> None:
        self._playback.stop_answer(self._id)

    def finish(self) -> None:
        self._playback.finish_answer(self._id)


class TwilioPlayback:
    """Sends the answers' audio over `send` (the stream's WebSocket) until `close`."""

    def __init__(
        self,
        stream_sid: str,
        send: Callable[[str], Awaitable[None]],
        clock: Callable[[], float] = time.monotonic,
        provider: str = "twilio",
    ) -> None:
        self._sid, self._send, self._clock = stream_sid, send, clock
        self._provider = provider  # whose messages (twilio_messages: Twilio's or Telnyx's)
        self._queue: deque[_Piece] = deque()
        self._sent: deque[_Sent] = deque()  # frames out, not yet known played
        self._played: OrderedDict[str, float] = OrderedDict()  # answer -> ms played
        self._finished: set[str] = set()  # answers whose audio has all been given
        self._marks: dict[str, tuple[str, float]] = {}  # mark out -> (answer, its end ms)
        self._mark_count = 0
        self._current: str | None = None  # the answer whose audio is out
        self._last: str | None = None
        self._emit: EventSink = lambda _event: None
        self._held = False
        self._plays_until = 0.0  # when Twilio will have played every frame sent
        self._wake = asyncio.Event()
        self._outgoing: list[str] = []  # control messages (clear) for the sender to send
        self._task: asyncio.Task[None] | None = None
        self.frames_sent = 0

    # -- Playback (the session's side) ------------------------------------------------

    def attach(self, emit: EventSink) -> None:
        self._emit = emit

    def playout(self, response_id: str) -> TwilioPlayout:
        return TwilioPlayout(self, response_id)

    def hold(self) -> None:
        if self._held:
            return
        self._held = True
        self._settle()
        unplayed = [_Piece(s.response_id, s.data, s.at_ms) for s in self._sent]
        self._sent.clear()
        self._queue.extendleft(reversed(unplayed))
        self._clear_twilio()

    def release(self) -> None:
        self._held = False
        self._wake.set()

    def clear(self) -> None:
        response_id = self._current or self._last
        self._queue.clear()
        self._drop_unplayed(None)
        self._current = None
        if response_id is not None:
            self._emit(OutputAudioCleared(response_id=response_id))

    # -- one answer's audio ----------------------------------------------------------

    def play_answer(self, response_id: str, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        if (fmt.type, fmt.rate) != ("audio/pcmu", RATE):  # the session was told another format
            piece = encode_audio(
                resample(decode_audio(piece, fmt.type), fmt.rate, RATE), "audio/pcmu"
            )
        if piece:
            self._finished.discard(response_id)
            self._queue.append(_Piece(response_id, piece, at_ms))
            self._wake.set()

    def answer_played_ms(self, response_id: str) -> float | None:
        self._settle()
        return self._played.get(response_id)

    def stop_answer(self, response_id: str) -> None:
        queued = any(p.response_id == response_id for p in self._queue)
        self._queue = deque(p for p in self._queue if p.response_id != response_id)
        out = self._drop_unplayed(response_id)
        if self._current == response_id and (queued or out):
            self._current = None
            self._emit(OutputAudioCleared(response_id=response_id))

    def finish_answer(self, response_id: str) -> None:
        self._finished.add(response_id)
        self._wake.set()

    # -- Twilio's side ---------------------------------------------------------------

    def marked(self, name: str) -> None:
        """Twilio echoed a mark: the answer it ends has played to its end (unless the
        mark was cleared, and then it is no longer ours)."""
        answer = self._marks.pop(name, None)
        if answer is None:
            return
        response_id, end_ms = answer
        self._note_played(response_id, end_ms)
        if self._current == response_id:
            self._current = None
            self._emit(OutputAudioStopped(response_id=response_id))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # -- the sender --------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            while self._outgoing:
                await self._send(self._outgoing.pop(0))
            if self._held or not self._queue:
                await self._mark_finished()
                self._wake.clear()
                if not self._outgoing and (self._held or not self._queue):
                    await self._wake.wait()
                continue
            now = self._clock()
            due = self._plays_until - LEAD_S
            if due > now:
                self._wake.clear()  # a clear or hold meanwhile wakes it
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), due - now)
                continue
            await self._send_frame(now)

    async def _send_frame(self, now: float) -> None:
        piece = self._queue[0]
        frame = b""
        # one answer's pieces fill a frame back to back (a clause's last piece is short)
        while self._queue and self._queue[0].response_id == piece.response_id:
            head = self._queue[0]
            room = FRAME_BYTES - len(frame)
            frame += head.data[:room]
            if len(head.data) > room:
                at_ms = head.at_ms + room / BYTES_PER_MS
                self._queue[0] = _Piece(head.response_id, head.data[room:], at_ms)
                break
            self._queue.popleft()
        if self._current != piece.response_id:
            if self._current is not None:
                self._emit(OutputAudioStopped(response_id=self._current))
            self._current = self._last = piece.response_id
            self._emit(OutputAudioStarted(response_id=piece.response_id))
        plays_at = max(now, self._plays_until)
        self._plays_until = plays_at + FRAME_S
        self._sent.append(_Sent(piece.response_id, frame, piece.at_ms, plays_at))
        frame += SILENCE * (FRAME_BYTES - len(frame))  # an answer's last frame, filled
        self.frames_sent += 1
        await self._send(twilio_messages.media(self._sid, frame, self._provider))

    async def _mark_finished(self) -> None:
        """A `mark` after the last frame of each answer whose audio has all gone out."""
        for response_id in list(self._finished):
            if any(p.response_id == response_id for p in self._queue):
                continue
            self._finished.discard(response_id)
            if self._current != response_id:
                continue  # none of it went out, or it was stopped
            self._mark_count += 1
            name = f"{response_id}.{self._mark_count}"
            ends = [s.at_ms + len(s.data) / BYTES_PER_MS for s in self._sent]
            end_ms = max(ends, default=self._played.get(response_id, 0.0))
            self._marks[name] = (response_id, end_ms)
            await self._send(twilio_messages.mark(self._sid, name, self._provider))

    # -- what has played ---------------------------------------------------------------

    def _settle(self) -> None:
        """Frames whose turn has come count as played."""
        now = self._clock()
        while self._sent and self._sent[0].plays_at <= now:
            sent = self._sent.popleft()
            self._note_played(sent.response_id, sent.at_ms + len(sent.data) / BYTES_PER_MS)

    def _drop_unplayed(self, response_id: str | None) -> bool:
        """Forget the frames of `response_id` (None: all) Twilio has yet to play, and
        clear its buffer; whether there were any."""
        self._settle()
        kept = deque(s for s in self._sent if response_id not in (None, s.response_id))
        dropped = len(kept) != len(self._sent)
        self._sent = kept
        if dropped or any(r == response_id or response_id is None for r, _ in self._marks.values()):
            self._clear_twilio()
        return dropped

    def _clear_twilio(self) -> None:
        self._marks.clear()  # Twilio echoes them now: nothing played
        self._plays_until = self._clock()
        self._outgoing.append(twilio_messages.clear(self._sid, self._provider))
        self._wake.set()

    def _note_played(self, response_id: str, ms: float) -> None:
        self._played[response_id] = max(ms, self._played.get(response_id, 0.0))
        self._played.move_to_end(response_id)
        while len(self._played) > KEPT_ANSWERS:
            self._played.popitem(last=False)
