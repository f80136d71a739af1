"""PCM helpers: wire formats <-> float32 samples, and streaming resampling.

Inside the server audio is float32 mono in [-1, 1]; input is resampled once to 16 kHz
(what VAD and Whisper want), output from the TTS voice's rate to the session's rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import soxr

PIPELINE_RATE = 16_000  # what VAD and ASR take
PROTOCOL_RATE: Final = 24_000  # the Realtime protocol's PCM16, both ways (and WebRTC's tracks)


def pcm16_to_float(data: bytes) -> np.ndarray:
    """Little-endian PCM16 bytes -> float32 samples. Raises ValueError on an odd byte count."""
    if len(data) % 2:
        raise ValueError(f"PCM16 audio must have an even number of bytes, got {len(data)}")
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def float_to_pcm16(samples: np.ndarray) -> bytes:
    clipped = np.clip(samples, -1.0, 1.0)
    return (clipped * 32767.0).astype("<i2").tobytes()


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample a whole clip (not streaming)."""
    if from_rate == to_rate:
        return samples.astype(np.float32, copy=False)
    return soxr.resample(samples.astype(np.float32), from_rate, to_rate).astype(np.float32)


class StreamResampler:
    """Stateful resampler for audio that arrives in chunks (no clicks at chunk borders),
    handing out each chunk's audio at once: libswresample (PyAV, which aiortc brings)
    holds back only its filter's half-length. soxr's stream, at its default quality,
    handed out its output in bursts every other 20 ms chunk, and every sample held back
    is a later end of speech: the VAD hears the silence after the last word that much
    later (figures in docs/benchmarks.md)."""

    def __init__(self, from_rate: int, to_rate: int) -> None:
        import av

        self.from_rate = from_rate
        self.to_rate = to_rate
        self._resampler = (
            av.AudioResampler(format="flt", layout="mono", rate=to_rate)
            if from_rate != to_rate
            else None
        )
        self._pts = 0

    def process(self, samples: np.ndarray, last: bool = False) -> np.ndarray:
        samples = samples.astype(np.float32, copy=False)
        if self._resampler is None:
            return samples
        frames = []
        if samples.size:
            frames += self._resampler.resample(self._frame(samples))
        if last:
            frames += self._resampler.resample(None)  # what the filter still holds
        if not frames:
            return np.zeros(0, np.float32)
        return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32)

    def _frame(self, samples: np.ndarray) -> Any:
        import fractions

        import av

        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(samples.reshape(1, -1)), format="flt", layout="mono"
        )
        frame.sample_rate = self.from_rate
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, self.from_rate)
        self._pts += samples.size
        return frame


class FrameResampler:
    """Fixed frames in, fixed frames out at another rate, each out as its frame comes in
    (the first padded by the filter's lag, under 1 ms). For an RTP track: aiortc's Opus
    encoder resamples what is not 48 kHz through a FIFO of 960-sample frames, which then
    holds back a whole 20 ms frame; given 48 kHz frames of 960 it passes them through."""

    def __init__(self, from_rate: int, to_rate: int, out_samples: int) -> None:
        self._stream = StreamResampler(from_rate, to_rate)
        self.out_samples = out_samples
        self._pending = np.zeros(0, np.float32)

    def process(self, samples: np.ndarray) -> np.ndarray:
        """The next `out_samples` samples for this frame's `samples`."""
        pending = np.concatenate([self._pending, self._stream.process(samples)])
        if pending.size < self.out_samples:
            pending = np.concatenate(
                [np.zeros(self.out_samples - pending.size, np.float32), pending]
            )
        out, self._pending = pending[: self.out_samples], pending[self.out_samples :]
        return out


# --- G.711 (ITU-T) u-law and a-law, 8 kHz telephony codecs -------------------------------


def _ulaw_decode_table() -> np.ndarray:
    codes = ~np.arange(256, dtype=np.int32) & 0xFF
    sign = codes & 0x80
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    return np.where(sign != 0, -magnitude, magnitude).astype(np.int16)


def _alaw_decode_table() -> np.ndarray:
    codes = np.arange(256, dtype=np.int32) ^ 0x55
    sign = codes & 0x80
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    magnitude = np.where(
        exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0)
    )
    return np.where(sign != 0, magnitude, -magnitude).astype(np.int16)


def _encode_table(decode: np.ndarray) -> np.ndarray:
    """int16 value (offset by 32768) -> the code whose decoded level is nearest."""
    order = np.argsort(decode, kind="stable")
    levels = decode[order].astype(np.int32)
    values = np.arange(-32768, 32768, dtype=np.int32)
    idx = np.clip(np.searchsorted(levels, values), 1, len(levels) - 1)
    nearer_left = (values - levels[idx - 1]) <= (levels[idx] - values)
    return order[np.where(nearer_left, idx - 1, idx)].astype(np.uint8)


_G711_DECODE = {"audio/pcmu": _ulaw_decode_table(), "audio/pcma": _alaw_decode_table()}
_G711_ENCODE = {k: _encode_table(v) for k, v in _G711_DECODE.items()}


def decode_audio(data: bytes, fmt_type: str) -> np.ndarray:
    """Wire bytes in a Realtime audio format -> float32 samples."""
    if fmt_type == "audio/pcm":
        return pcm16_to_float(data)
    codes = np.frombuffer(data, dtype=np.uint8)
    return _G711_DECODE[fmt_type][codes].astype(np.float32) / 32768.0


def encode_audio(samples: np.ndarray, fmt_type: str) -> bytes:
    """float32 samples -> wire bytes in a Realtime audio format."""
    if fmt_type == "audio/pcm":
        return float_to_pcm16(samples)
    ints = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int32) + 32768
    return _G711_ENCODE[fmt_type][ints].tobytes()


@dataclass
class AudioBuffer:
    """Uncommitted input audio at 16 kHz, addressed by stream position."""

    chunks: list[np.ndarray] = field(default_factory=list)
    start: int = 0  # stream position of the first buffered sample
    size: int = 0

    @property
    def end(self) -> int:
        return self.start + self.size

    def append(self, samples: np.ndarray) -> None:
        self.chunks.append(samples)
        self.size += samples.size

    def view(self, lo: int, hi: int) -> np.ndarray:
        if not self.chunks:  # nothing buffered yet (or all dropped)
            return np.zeros(0, np.float32)
        buf = np.concatenate(self.chunks) if len(self.chunks) != 1 else self.chunks[0]
        self.chunks = [buf] if buf.size else []
        a, b = max(lo - self.start, 0), max(min(hi - self.start, self.size), 0)
        return buf[a:b] if b > a else np.zeros(0, np.float32)

    def drop_before(self, position: int) -> None:
        rest = self.view(position, self.end).copy()
        self.start = max(position, self.start)
        self.chunks, self.size = ([rest] if rest.size else []), rest.size
