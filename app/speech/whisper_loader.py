"""faster-whisper's model as the server loads it: int8 on CPU, its encoder over a window
fitted to the clip, its decoder on one thread of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

WINDOW_S = 30  # Whisper's input window
FRAMES_PER_S = 100  # log-mel frames (10 ms hop)


class DecoderOnOneThread:
    """CTranslate2's Whisper with its encoder on the pass's threads and its decoder (and
    language detection, one decoder step) on one thread of a second copy of the model.

    Decoding is a token at a time, bound by memory, not arithmetic: on 2 cores a second
    thread did not speed greedy decoding and slowed beam search by about a third (the
    same tokens either way; bench asr). On one thread the other core stays free for the
    rest of the turn (the turn model, the LLM, another session)."""

    def __init__(self, encoder: Any, decoder: Any) -> None:
        self._encoder = encoder
        self._decoder = decoder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._encoder, name)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoder.generate(*args, **kwargs)

    def detect_language(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoder.detect_language(*args, **kwargs)


def load_whisper(model_dir: Path, threads: int, decode_apart: bool) -> Any:
    """faster-whisper's model, whose encoder reads only the first `window_frames` frames;
    with `decode_apart` its decoder runs on one thread (see DecoderOnOneThread)."""
    import ctranslate2
    from faster_whisper import WhisperModel

    class FittedWindowWhisper(WhisperModel):  # type: ignore[misc]
        window_frames = WINDOW_S * FRAMES_PER_S

        def encode(self, features: np.ndarray) -> Any:
            # faster-whisper pads every window to 30 s; what is cut here is that padding.
            return super().encode(np.ascontiguousarray(features[..., : self.window_frames]))

    model = FittedWindowWhisper(
        str(model_dir), device="cpu", compute_type="int8", cpu_threads=threads
    )
    if decode_apart and threads > 1:
        decoder = ctranslate2.models.Whisper(
            str(model_dir), device="cpu", compute_type="int8", intra_threads=1
        )
        model.model = DecoderOnOneThread(model.model, decoder)
    return model
