"""The bot's own voice coming back through the user's microphone (loudspeakers, no headset).

The browser's echo canceller removes most of it; what gets through would otherwise be
heard as the user barging in, and the bot would interrupt itself. The server knows
exactly what it played, so it checks a double-talk question directly: does the speech
the VAD just heard follow the audio the client was playing a moment before?

How (a reference-based double-talk check, after the idea of the Geigel/coherence
detectors in acoustic echo cancellers; our own code): the audio sent to the client is
laid out on a playback timeline (each piece plays on arrival, or after the piece before
it). A window of input is compared with that timeline over every delay up to
`max_delay_s`, as log band energies per 10 ms frame with each band's and each frame's
mean removed: that cancels the room's and the devices' colouring, any attenuation and
the loudness contour any two voices share, and energy envelopes survive reverberation
that a waveform correlation would not. The best
Pearson correlation over the delays is the verdict: echo alone scores near 1, the
user's own voice (alone or over the echo) near 0.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from app.audio import PIPELINE_RATE, decode_audio, resample
from app.protocol.session_schema import AudioFormat

HOP = PIPELINE_RATE // 100  # one feature frame a 10 ms
FFT = 512  # 32 ms analysis window
BANDS = 16  # log-spaced, 150 Hz to 6 kHz
# The best correlation over delays above which speech is echo. Measured on 0.6 s windows
# of a Piper answer: its echo (delayed 0.1-0.4 s, -20 to -30 dB, light noise) scored
# >= 0.86, with a 0.3 s reverberant tail 0.60-0.89; other speech (Piper's same voice,
# espeak-ng, jfk.flac) <= 0.64. A missed echo is a false barge-in, a false echo only
# delays a real one to the next check (more of the user's voice, a lower score).
ECHO_CORRELATION = 0.7
WINDOW = PIPELINE_RATE * 6 // 10  # the input compared: its last 0.6 s
CHECK_EVERY = PIPELINE_RATE // 10  # speech held back as echo is checked again each 100 ms
# Quieter than this (RMS, -60 dBFS; speech at a microphone is -40 to -20) the input holds
# nothing to compare, nor a barge-in: the VAD's hangover after an echo scored 0.62-0.78
# at -74 to -80 dBFS, where there is too little signal left for the check to mean much.
MIN_INPUT_RMS = 1e-3


def _band_edges() -> np.ndarray:
    freqs = np.geomspace(150, 6000, BANDS + 1)
    return np.clip(np.round(freqs * FFT / PIPELINE_RATE).astype(int), 1, FFT // 2)


_EDGES = _band_edges()
_WINDOW = np.hanning(FFT).astype(np.float32)


def band_energies(samples: np.ndarray) -> np.ndarray:
    """(frames, BANDS) energies, one frame each 10 ms."""
    if samples.size < FFT:
        samples = np.pad(samples, (0, FFT - samples.size))
    frames = np.lib.stride_tricks.sliding_window_view(samples, FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _WINDOW, axis=1)) ** 2
    cumulative = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(power, axis=1)], axis=1)
    bands: np.ndarray = cumulative[:, _EDGES[1:]] - cumulative[:, _EDGES[:-1]]
    return np.log10(bands + max(float(bands.max()), 1e-12) * 1e-5)  # a 50 dB range


def _spectral_shape(log_bands: np.ndarray) -> np.ndarray:
    """Each frame's mean removed: loudness rises and falls alike in any two voices, so
    comparing it inflates the match between unrelated speech (0.84 against 0.64 at best,
    measured on Piper, espeak-ng and jfk.flac against a Piper answer)."""
    return log_bands - log_bands.mean(axis=1, keepdims=True)


def echo_correlation(heard: np.ndarray, played: np.ndarray) -> float:
    """How well `heard` follows some stretch of `played` (both 16 kHz, `played` at least
    as long): the best correlation of their band envelopes over every offset."""
    if heard.size < FFT or not np.any(heard) or not np.any(played):
        return 0.0
    mic_bands = _spectral_shape(band_energies(heard))
    mic = (mic_bands - mic_bands.mean(axis=0)).ravel()
    reference = _spectral_shape(band_energies(played))
    spans = np.lib.stride_tricks.sliding_window_view(reference, mic_bands.shape)[:, 0]
    spans = spans - spans.mean(axis=1, keepdims=True)  # each band's mean, at each offset
    flat = spans.reshape(len(spans), -1)
    norms = np.linalg.norm(flat, axis=1) * np.linalg.norm(mic)
    scores = flat @ mic / np.maximum(norms, 1e-9)
    return float(scores.max())


def _ends(piece: tuple[float, np.ndarray]) -> float:
    start, samples = piece
    return start + samples.size / PIPELINE_RATE


class EchoReference:
    """What this session's client is playing, on a wall-clock timeline, and the check of
    input against it. `played` is called on the event loop as audio leaves; `heard` may
    run on a worker thread."""

    def __init__(
        self,
        max_delay_s: float = 1.0,
        threshold: float = ECHO_CORRELATION,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_delay_s = max_delay_s
        self.threshold = threshold
        self.clock = clock
        self._pieces: deque[tuple[float, np.ndarray]] = deque()  # (plays from, 16 kHz audio)
        self._play_end = 0.0
        self._lock = threading.Lock()

    def played(self, piece: bytes, fmt: AudioFormat) -> None:
        """Audio just sent to the client: it plays now, or when what is queued ends."""
        samples = resample(decode_audio(piece, fmt.type), fmt.rate, PIPELINE_RATE)
        now = self.clock()
        with self._lock:
            start = max(now, self._play_end)
            self._play_end = start + samples.size / PIPELINE_RATE
            self._pieces.append((start, samples))
            # older than any timeline asks for (a window and the longest delay before it)
            horizon = now - WINDOW / PIPELINE_RATE - self.max_delay_s - 1.0
            while self._pieces and _ends(self._pieces[0]) < horizon:
                self._pieces.popleft()

    def stopped(self) -> None:
        """The client was told to stop (barge-in): nothing queued plays any more."""
        with self._lock:
            self._play_end = min(self._play_end, self.clock())

    @property
    def plays_until(self) -> float:
        """When (on the clock) what was sent so far has played out on the client."""
        return self._play_end

    def audible(self) -> bool:
        """Whether our audio may be reaching the microphone now."""
        return self.clock() <= self._play_end + self.max_delay_s

    def heard(self, window: np.ndarray) -> bool:
        """Whether `window` (16 kHz, ending now) is our own audio coming back, or too quiet
        to be anything else."""
        if window.size < FFT or float(np.sqrt(np.mean(window**2))) < MIN_INPUT_RMS:
            return True  # near silence (the VAD's hangover): nothing that could be the user
        return echo_correlation(window, self._timeline(window.size)) >= self.threshold

    def _timeline(self, size: int) -> np.ndarray:
        """What played from `max_delay_s` before the window began until now."""
        out = np.zeros(size + round(self.max_delay_s * PIPELINE_RATE), np.float32)
        start = self.clock() - out.size / PIPELINE_RATE
        with self._lock:
            pieces = list(self._pieces)
        for begins, samples in pieces:
            at = round((begins - start) * PIPELINE_RATE)
            lo, hi = max(at, 0), min(at + samples.size, out.size)
            if lo < hi:
                out[lo:hi] = samples[lo - at : hi - at]
        return out
