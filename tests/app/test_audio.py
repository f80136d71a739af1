"""Wire audio formats and streaming resampling."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio import StreamResampler, decode_audio, encode_audio, pcm16_to_float, resample


@pytest.mark.parametrize(
    ("fmt", "tolerance"), [("audio/pcm", 1e-4), ("audio/pcmu", 0.02), ("audio/pcma", 0.02)]
)
def test_round_trip(fmt: str, tolerance: float) -> None:
    tone = 0.5 * np.sin(np.linspace(0, 200, 8000)).astype(np.float32)
    assert np.abs(decode_audio(encode_audio(tone, fmt), fmt) - tone).max() < tolerance


def test_g711_reference_values() -> None:
    # ITU-T G.711: u-law 0xFF and a-law 0xD5 are the codes of silence
    assert decode_audio(b"\xff", "audio/pcmu")[0] == 0.0
    assert abs(decode_audio(b"\xd5", "audio/pcma")[0]) < 1e-3
    assert decode_audio(b"\x00", "audio/pcmu")[0] == pytest.approx(-32124 / 32768)


def test_odd_pcm16_is_refused() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        pcm16_to_float(b"\x00\x01\x02")


def test_stream_resampler_matches_whole_clip() -> None:
    tone = np.sin(np.linspace(0, 600, 24_000)).astype(np.float32)
    stream = StreamResampler(24_000, 16_000)
    pieces = [stream.process(tone[i : i + 480]) for i in range(0, tone.size, 480)]
    pieces.append(stream.process(np.zeros(0, np.float32), last=True))
    streamed = np.concatenate(pieces)
    whole = resample(tone, 24_000, 16_000)
    assert abs(streamed.size - whole.size) <= 2
    n = min(streamed.size, whole.size) - 200
    assert np.abs(streamed[200:n] - whole[200:n]).max() < 1e-3
