"""Text to speech: Piper (neural, fast on CPU) with the bundled voice, plus clause chunking.

`ClauseChunker` cuts the LLM's streamed text at clause boundaries so the first audio can
be synthesized after a few words instead of after the whole answer.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np

from app.audio import resample


class PiperTTS:
    """A loaded Piper voice. `synthesize` is blocking: call it off the event loop."""

    def __init__(self, model_path: Path, *, name: str) -> None:
        from piper import PiperVoice

        self.name = name
        try:
            self.voice = PiperVoice.load(str(model_path))
        except Exception as exc:  # onnxruntime raises its own types for a corrupt file
            raise RuntimeError(
                f"cannot load TTS voice '{name}' from {model_path}: {exc}; reinstall its package"
            ) from exc
        self.sample_rate = int(self.voice.config.sample_rate)
        self._lock = threading.Lock()

    def synthesize(self, text: str, out_rate: int, speed: float = 1.0) -> np.ndarray:
        """Speak `text`; float32 mono samples at `out_rate`."""
        from piper import SynthesisConfig

        config = SynthesisConfig(length_scale=1.0 / max(speed, 0.25))
        with self._lock:
            chunks = [c.audio_float_array for c in self.voice.synthesize(text, config)]
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        audio = np.concatenate(chunks).astype(np.float32)
        return resample(audio, self.sample_rate, out_rate)


# A clause ends at . ! ? ; : , or a dash/newline, followed by whitespace, or, at the end
# of what the LLM has written so far, at . ! ? right after a letter ("France." ends a
# sentence now; "3." may still become "3.50", so it waits for the next token).
_BOUNDARY = re.compile(r"[.!?;:,\n](?=\s)|\s[-–—](?=\s)|(?<=[^\W\d_])[.!?]+$")


class ClauseChunker:
    """Accumulates streamed text and releases speakable pieces at clause boundaries.

    The first piece may be as short as `first_min_chars` (early first audio); later
    pieces wait for `min_chars` so the voice's prosody is not chopped into fragments.
    """

    def __init__(self, first_min_chars: int = 10, min_chars: int = 40) -> None:
        self.first_min_chars = first_min_chars
        self.min_chars = min_chars
        self._buffer = ""
        self._emitted_any = False

    def push(self, text: str) -> list[str]:
        self._buffer += text
        pieces: list[str] = []
        while True:
            minimum = self.min_chars if self._emitted_any else self.first_min_chars
            cut = None
            for match in _BOUNDARY.finditer(self._buffer):
                if match.end() >= minimum:
                    cut = match.end()
                    break
            if cut is None:
                return pieces
            piece, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:]
            if piece:
                pieces.append(piece)
                self._emitted_any = True

    def flush(self) -> list[str]:
        piece, self._buffer = self._buffer.strip(), ""
        return [piece] if piece else []
