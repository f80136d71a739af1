"""Wire audio formats and streaming resampling."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio import (
    FrameResampler,
    StreamResampler,
    decode_audio,
    encode_audio,
    pcm16_to_float,
    resample,
)


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


@pytest.mark.parametrize(("from_rate", "to_rate"), [(24_000, 16_000), (48_000, 24_000)])
def test_stream_resampler_hands_out_each_chunk_at_once(from_rate: int, to_rate: int) -> None:
    """The audio of each 20 ms chunk comes out with it, all but the filter's lag (1 ms at
    most): what the resampler holds back the VAD hears later (soxr's stream held back up
    to 38 ms, handing out audio every other chunk)."""
    stream = StreamResampler(from_rate, to_rate)
    noise = np.random.default_rng(0).standard_normal(from_rate).astype(np.float32) * 0.1
    chunk = from_rate // 50
    taken_in = given_out = 0
    for start in range(0, noise.size, chunk):
        given_out += stream.process(noise[start : start + chunk]).size
        taken_in += chunk
        held_ms = (taken_in / from_rate - given_out / to_rate) * 1000
        assert 0 <= held_ms <= 1.5, (start, held_ms)


def test_frame_resampler_gives_each_frame_its_size_at_the_new_rate() -> None:
    frames = FrameResampler(24_000, 48_000, 960)
    tone = np.sin(np.arange(480 * 5) * 2 * np.pi * 440 / 24_000).astype(np.float32)
    out = [frames.process(tone[i : i + 480]) for i in range(0, tone.size, 480)]
    assert [f.size for f in out] == [960] * 5
    # the tone's level in each, the first only short of its first 0.67 ms
    assert all(abs(np.sqrt(np.mean(f**2)) - np.sqrt(0.5)) < 0.02 for f in out)
