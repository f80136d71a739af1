"""Speaks one answer: clauses in, paced audio deltas out, and a record of what was sent.

TTS runs on the TTS executor. Audio leaves at real-time pace, at most `lead` ahead of
the client's playback, so a barge-in leaves little queued; the timeline of clauses lets
the conversation keep only the words that were actually heard.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from app.audio import encode_audio
from app.protocol.schemas import AudioFormat
from app.text_units import join, units

AUDIO_CHUNK_MS = 100  # size of each audio delta

# (clause, output rate) -> samples: the voice, speed and executor are bound by the caller.
Synthesize = Callable[[str, int], Awaitable[np.ndarray]]


@dataclass(frozen=True)
class SpokenClause:
    text: str
    start_ms: float
    end_ms: float


class Speaker:
    """Turns clauses into paced audio pieces handed to `send`."""

    def __init__(
        self,
        synthesize: Synthesize,
        fmt: AudioFormat,
        lead_ms: int,
        send: Callable[[bytes], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.synthesize = synthesize
        self.fmt = fmt
        self.lead_s = lead_ms / 1000
        self.send = send
        self.clock = clock
        self.bytes_per_ms = fmt.rate / 1000 * (2 if fmt.type == "audio/pcm" else 1)
        self.clauses: list[SpokenClause] = []
        self.audio_ms = 0.0
        self.first_audio_at: float | None = None
        self.muted = False

    async def run(self, clauses: asyncio.Queue[str | None], released: asyncio.Event) -> None:
        """Speak clauses until None; audio waits for `released` (held early answers)."""
        chunk = int(AUDIO_CHUNK_MS * self.bytes_per_ms) // 2 * 2
        while (clause := await clauses.get()) is not None:
            data = encode_audio(await self.synthesize(clause, self.fmt.rate), self.fmt.type)
            await released.wait()
            # Recorded before sending, so a barge-in mid-clause knows what it covered.
            self.clauses.append(
                SpokenClause(clause, self.audio_ms, self.audio_ms + len(data) / self.bytes_per_ms)
            )
            for offset in range(0, len(data), chunk):
                if self.first_audio_at is None:
                    self.first_audio_at = self.clock()
                ahead = self.audio_ms / 1000 - (self.clock() - self.first_audio_at)
                if ahead > self.lead_s:
                    await asyncio.sleep(ahead - self.lead_s)
                if self.muted:
                    return
                piece = data[offset : offset + chunk]
                self.send(piece)
                self.audio_ms += len(piece) / self.bytes_per_ms

    def played_ms(self) -> float:
        """How much of the audio the client has played by now (given the paced sending)."""
        if self.first_audio_at is None:
            return 0.0
        return min(self.audio_ms, (self.clock() - self.first_audio_at) * 1000)

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
