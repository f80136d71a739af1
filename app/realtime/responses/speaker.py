"""Speaks one answer: clauses in, paced audio deltas out, and a record of what was sent.

TTS runs on the TTS executor. Audio leaves at real-time pace, at most `lead` ahead of
the client's playback, so a barge-in leaves little queued; the timeline of clauses lets
the conversation keep only the words that were actually heard. A pause (speech over the
answer, not yet known to be an interruption) stops the sending where the client stopped
hearing; the client drops what it had queued, so a resume sends again from there.
When the server plays the audio itself (a WebRTC track, playback.py), a `Playout` gets
each piece too: what was heard is then what the track played, not an estimate, and a
pause or a cancel drops what the track had queued.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from app.audio import encode_audio
from app.protocol.session_schema import AudioFormat
from app.realtime.responses.playback import Playout
from app.text_units import join, units

AUDIO_CHUNK_MS = 100  # size of each audio delta

# (clause, output rate, slack) -> samples: the voice, speed and executor are bound by the
# caller; slack: seconds until the listener runs out of this answer's audio, so the TTS
# executor takes the clauses of all sessions earliest deadline first (a new answer's
# first clause before another's fifth, which still has seconds to play).
Synthesize = Callable[[str, int, float], Awaitable[np.ndarray]]


@dataclass(frozen=True)
class SpokenClause:
    text: str
    start_ms: float
    end_ms: float
    audio: bytes = field(default=b"", repr=False)  # kept to send again after a pause


class Speaker:
    """Turns clauses into paced audio pieces handed to `send`."""

    def __init__(
        self,
        synthesize: Synthesize,
        fmt: AudioFormat,
        lead_ms: int,
        send: Callable[[bytes], None],
        clock: Callable[[], float] = time.monotonic,
        playout: Playout | None = None,
    ) -> None:
        self.synthesize = synthesize
        self.fmt = fmt
        self.lead_s = lead_ms / 1000
        self.send = send
        self.clock = clock
        self._playout = playout
        self.sample_bytes = 2 if fmt.type == "audio/pcm" else 1
        self.bytes_per_ms = fmt.rate / 1000 * self.sample_bytes
        self.clauses: list[SpokenClause] = []
        self.audio_ms = 0.0  # the furthest point of the answer's audio sent
        self.first_audio_at: float | None = None
        self.first_synthesized_at: float | None = None  # the first clause's audio is ready
        self.muted = False
        self._end = 0  # bytes of audio on the timeline (synthesized and released)
        self._position = 0  # the next byte to send
        # playback since the last start or resume: (clock, timeline ms) at its first piece
        self._anchor: tuple[float, float] | None = None
        self._base_ms = 0.0  # what was played before the anchor
        self._paused_ms: float | None = None  # what the client had heard when paused
        self._playing = asyncio.Event()
        self._playing.set()

    @property
    def paused(self) -> bool:
        return self._paused_ms is not None

    async def run(self, clauses: asyncio.Queue[str | None], released: asyncio.Event) -> None:
        """Speak clauses until None; audio waits for `released` (held early answers).
        Returns once all of it was sent, waiting out pauses."""
        while (clause := await clauses.get()) is not None:
            audio = await self.synthesize(clause, self.fmt.rate, self.slack_s())
            if self.first_synthesized_at is None:
                self.first_synthesized_at = self.clock()
            data = encode_audio(audio, self.fmt.type)
            await released.wait()
            # Recorded before sending, so a barge-in mid-clause knows what it covered.
            start, self._end = self._end, self._end + len(data)
            self.clauses.append(
                SpokenClause(clause, start / self.bytes_per_ms, self._end / self.bytes_per_ms, data)
            )
            await self._play()
        await self._play()  # a pause while the last clause was synthesized rewound it
        if self._playout is not None:
            self._playout.finish()

    def stop(self) -> None:
        """Send nothing more (a cancelled answer); the server's track drops its queue."""
        self.muted = True
        if self._playout is not None:
            self._playout.stop()

    @property
    def exact(self) -> bool:
        """Whether `played_ms` is what was played (the server's track), not an estimate."""
        return self._playout is not None

    def pause(self, rewind: bool = True) -> None:
        """Send nothing more; a resume starts again from what the client had played
        (`rewind`: it dropped what it had queued), or else from what was sent."""
        if self.paused:
            return
        if self._playout is not None:  # the server's own track: nothing queued plays on
            self._playout.stop()
            rewind = True
        heard = self.played_ms() if rewind else self._position / self.bytes_per_ms
        self._paused_ms = self._base_ms = heard
        self._position = int(heard * self.bytes_per_ms) // self.sample_bytes * self.sample_bytes
        self._anchor = None
        self._playing.clear()

    def resume(self) -> None:
        if self.paused:
            self._paused_ms = None
            self._playing.set()

    async def _play(self) -> None:
        """Send the timeline from `_position` to its end, paced, waiting out pauses."""
        chunk = int(AUDIO_CHUNK_MS * self.bytes_per_ms) // 2 * 2
        while self._position < self._end:
            await self._playing.wait()
            if self.muted:
                return
            position_ms = self._position / self.bytes_per_ms
            if self._anchor is None:
                self._anchor = (self.clock(), position_ms)
            if self.first_audio_at is None:
                self.first_audio_at = self.clock()
            ahead = (position_ms - self._anchor[1]) / 1000 - (self.clock() - self._anchor[0])
            if ahead > self.lead_s:
                await asyncio.sleep(ahead - self.lead_s)
            if self.muted:
                return
            if self.paused:  # paused while waiting: rewound, wait for the resume
                continue
            piece = self._piece(chunk)
            if self._playout is not None:
                self._playout.play(piece, self.fmt, position_ms)
            self.send(piece)
            self._position += len(piece)
            self.audio_ms = max(self.audio_ms, self._position / self.bytes_per_ms)

    def _piece(self, chunk: int) -> bytes:
        """Up to `chunk` bytes from `_position`, within one clause."""
        start = 0
        for clause in self.clauses:
            end = start + len(clause.audio)
            if self._position < end:
                offset = self._position - start
                return clause.audio[offset : min(offset + chunk, len(clause.audio))]
            start = end
        return b""

    def slack_s(self) -> float:
        """Seconds of this answer's audio the listener has yet to hear: how long its next
        clause can take before the audio runs dry (0 for the first)."""
        return max(0.0, self._end / self.bytes_per_ms - self.played_ms()) / 1000

    def played_ms(self) -> float:
        """How much of the audio the client has played by now (given the paced sending)."""
        if self._paused_ms is not None:
            return self._paused_ms
        if self._playout is not None:
            played = self._playout.played_ms()
            return self._base_ms if played is None else played
        if self._anchor is None:
            return self._base_ms
        since, at_ms = self._anchor
        sent_ms = self._position / self.bytes_per_ms
        return min(sent_ms, at_ms + (self.clock() - since) * 1000)

    def text_played(self, audio_end_ms: float) -> str:
        """The answer's text up to `audio_end_ms` of its audio (whole units: words, or
        Chinese characters, each taken to last as long as the others of its clause)."""
        spoken = []
        for clause in self.clauses:
            if clause.end_ms <= audio_end_ms:
                spoken.append(clause.text)
            elif clause.start_ms < audio_end_ms:
                words = units(clause.text)
                share = (audio_end_ms - clause.start_ms) / max(clause.end_ms - clause.start_ms, 1)
                spoken.append(join(words[: int(len(words) * share)]))
        return join(spoken)
