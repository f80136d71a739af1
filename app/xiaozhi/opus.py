"""Opus to and from the session's PCM16 mono 24 kHz, with libopus through PyAV."""

from __future__ import annotations

import fractions

import av
import numpy as np

from app.audio import PROTOCOL_RATE


class OpusError(ValueError):
    """An Opus packet libopus could not decode."""


class OpusDecoder:
    """A device's Opus packets (any rate libopus decodes) -> PCM16 mono 24 kHz."""

    def __init__(self) -> None:
        self._codec = av.CodecContext.create("libopus", "r")
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=PROTOCOL_RATE)

    def decode(self, packet: bytes) -> bytes:
        try:
            frames = self._codec.decode(av.Packet(packet))  # type: ignore[attr-defined]
        except av.FFmpegError as exc:
            raise OpusError(f"an Opus packet libopus cannot decode ({exc})") from None
        pcm = [
            out.to_ndarray().tobytes()
            for frame in frames
            for out in self._resampler.resample(frame)
        ]
        return b"".join(pcm)


class OpusEncoder:
    """PCM16 mono at `rate` -> Opus packets of `frame_ms` each (the last one padded)."""

    def __init__(self, rate: int = PROTOCOL_RATE, frame_ms: int = 60, bitrate: int = 32000):
        self.rate, self.frame_ms = rate, frame_ms
        self._frame_bytes = rate * frame_ms // 1000 * 2
        self._bitrate = bitrate
        self._pending = b""
        self._open()

    def _open(self) -> None:
        codec = av.CodecContext.create("libopus", "w")
        codec.sample_rate = self.rate  # type: ignore[attr-defined]
        codec.layout = "mono"  # type: ignore[attr-defined]
        codec.format = "s16"  # type: ignore[attr-defined]
        codec.bit_rate = self._bitrate
        codec.time_base = fractions.Fraction(1, self.rate)
        codec.options = {"frame_duration": str(self.frame_ms), "application": "voip"}
        codec.open()
        self._codec, self._pts = codec, 0

    def encode(self, pcm: bytes) -> list[bytes]:
        """The whole frames `pcm` completes (the rest waits for more, or `flush`)."""
        self._pending += pcm
        whole = len(self._pending) - len(self._pending) % self._frame_bytes
        ready, self._pending = self._pending[:whole], self._pending[whole:]
        packets: list[bytes] = []
        for start in range(0, len(ready), self._frame_bytes):
            packets += self._encode_frame(ready[start : start + self._frame_bytes])
        return packets

    def flush(self) -> list[bytes]:
        """The held samples as one last frame, padded with silence."""
        if not self._pending:
            return []
        last = self._pending + bytes(self._frame_bytes - len(self._pending))
        self._pending = b""
        return self._encode_frame(last)

    def reset(self) -> None:
        """Forget the held samples (an answer cut off)."""
        self._pending = b""

    def _encode_frame(self, pcm: bytes) -> list[bytes]:
        samples = np.frombuffer(pcm, np.int16).reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate, frame.pts = self.rate, self._pts
        self._pts += samples.shape[1]
        return [bytes(packet) for packet in self._codec.encode(frame)]  # type: ignore[attr-defined]
