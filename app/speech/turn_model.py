"""Semantic end-of-turn detection: Smart Turn v3.2 (ONNX, BSD-2) hears whether an
utterance is complete, from its sound (intonation, a trailing "and..."), not its words.

Only the model file comes from the `pipecat-ai` wheel; the input is computed here: the
last 8 s of 16 kHz audio (left-padded with silence), normalised to zero mean and unit
variance, as an 80-bin Whisper log-mel spectrogram (n_fft 400, hop 160, Slaney mel
scale and norm, log10 clamped to 8 dB below the peak, scaled as (x + 4) / 4), which is
what `transformers.WhisperFeatureExtractor(chunk_length=8)` computes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime

from app.executor import ModelExecutor

RATE = 16_000
WINDOW_S = 8
N_FFT, HOP, N_MELS = 400, 160, 80


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = 3.0 * hz / 200.0
    log = 15.0 + np.log(np.maximum(hz, 1e-9) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(hz >= 1000.0, log, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = 200.0 * mel / 3.0
    log = 1000.0 * np.exp((mel - 15.0) * (np.log(6.4) / 27.0))
    return np.where(mel >= 15.0, log, linear)


def mel_filters() -> np.ndarray:
    """(N_FFT // 2 + 1, N_MELS) triangular filters, area-normalised (Slaney)."""
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(RATE / 2), N_MELS + 2))
    bins = np.linspace(0, RATE // 2, N_FFT // 2 + 1)
    lower = (bins[:, None] - edges[None, :-2]) / (edges[1:-1] - edges[:-2])
    upper = (edges[None, 2:] - bins[:, None]) / (edges[2:] - edges[1:-1])
    triangles = np.maximum(0.0, np.minimum(lower, upper))
    return triangles * (2.0 / (edges[2:] - edges[:-2]))


_FILTERS = mel_filters()
_HANN = np.hanning(N_FFT + 1)[:-1]  # periodic, as torch.hann_window


def log_mel(audio_16k: np.ndarray) -> np.ndarray:
    """(N_MELS, 800) float32 features of the last 8 s of `audio_16k`."""
    n = WINDOW_S * RATE
    x = np.asarray(audio_16k, dtype=np.float64)[-n:]
    x = np.pad(x, (n - x.size, 0))
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    padded = np.pad(x, (N_FFT // 2, N_FFT // 2), mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _HANN, axis=-1)) ** 2
    mel = np.log10(np.maximum(power @ _FILTERS, 1e-10))[:-1].T  # Whisper drops the last frame
    mel = np.maximum(mel, mel.max() - 8.0)
    return ((mel + 4.0) / 4.0).astype(np.float32)


class SmartTurnModel:
    """The loaded turn model; `complete_probability` is blocking (an ONNX run): run it on
    `executor`, never behind ASR."""

    def __init__(self, path: Path, threads: int = 1) -> None:
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = threads
        try:
            self.session = onnxruntime.InferenceSession(
                str(path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own types for a bad file
            raise RuntimeError(
                f"cannot load the turn model from {path}: {exc}; reinstall it with "
                "`pip install --no-deps pipecat-ai` (or `make install`)"
            ) from exc
        self.executor = ModelExecutor("turn", workers=1, max_pending=16)

    def complete_probability(self, audio_16k: np.ndarray) -> float:
        """How likely the utterance that ends `audio_16k` is finished (0..1)."""
        features = log_mel(audio_16k)[None]
        (out,) = self.session.run(None, {"input_features": features})
        return float(np.asarray(out).reshape(-1)[0])

    async def score(self, audio_16k: np.ndarray) -> float:
        return await self.executor.run(self.complete_probability, audio_16k)
