"""A recording's two tracks as they played: the user's audio where it arrived, the
assistant's where it played (after what was queued before it), cut where it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.audio import PIPELINE_RATE

RATE = PIPELINE_RATE  # both tracks: what the VAD and ASR hear (16 kHz)


@dataclass
class Piece:
    start: int  # samples since the recording began
    samples: np.ndarray  # int16
    item_id: str | None = None

    @property
    def end(self) -> int:
        return self.start + self.samples.size


@dataclass
class Track:
    """Pieces laid end to end, each no earlier than when it came."""

    pieces: list[Piece] = field(default_factory=list)
    end: int = 0  # where the last piece ends

    @property
    def samples(self) -> int:
        return sum(p.samples.size for p in self.pieces)

    def add(self, at: int, samples: np.ndarray, item_id: str | None = None) -> None:
        start = max(at, self.end)
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
        self.pieces.append(Piece(start, pcm, item_id))
        self.end = start + pcm.size

    def cut(self, at: int, item_id: str | None = None) -> None:
        """Nothing of `item_id` (or of anything, None) plays from `at` on."""
        kept = []
        for piece in self.pieces:
            if (item_id is not None and piece.item_id != item_id) or piece.end <= at:
                kept.append(piece)
            elif piece.start < at:
                kept.append(Piece(piece.start, piece.samples[: at - piece.start], piece.item_id))
        self.pieces = kept
        self.end = min(self.end, max([at, *(p.end for p in kept)]))

    def item_start(self, item_id: str) -> int | None:
        return next((p.start for p in self.pieces if p.item_id == item_id), None)

    def render(self, length: int) -> np.ndarray:
        out = np.zeros(length, np.int16)
        for piece in self.pieces:
            end = min(piece.end, length)
            if end > piece.start:
                out[piece.start : end] = piece.samples[: end - piece.start]
        return out


def stereo(user: Track, assistant: Track) -> np.ndarray:
    """Interleaved int16 frames: the user on the left, the assistant on the right."""
    length = max(user.end, assistant.end, max((p.end for p in assistant.pieces), default=0))
    return np.stack([user.render(length), assistant.render(length)], axis=1)
