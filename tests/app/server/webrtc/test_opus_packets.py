"""The answer track's Opus encoder: a settled silence is sent again, not encoded, and
what a listener decodes is the same as from an encoder fed every frame."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from av import CodecContext, Packet

from app.audio import float_to_pcm16
from app.server.webrtc.opus_packets import FRAME_SAMPLES, SILENCE, OpusPackets
from app.server.webrtc.output_track import OutputTrack


def _voice(frames: int, seed: int) -> list[bytes]:
    """A voice-like sound: harmonics of a gliding pitch, its loudness moving, some noise."""
    n = frames * FRAME_SAMPLES
    t = np.arange(n) / 24_000
    pitch = 140 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / 24_000
    sound = sum(np.sin(k * phase) / k for k in range(1, 8))
    sound *= 0.25 * (1.2 + np.sin(2 * np.pi * 3 * t))
    sound += np.random.default_rng(seed).normal(0, 0.01, n)
    pcm = float_to_pcm16(sound.astype(np.float32))
    size = FRAME_SAMPLES * 2
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def _send(opus: OpusPackets, frames: list[bytes]) -> list[Packet]:
    """As the track sends: a settled silence's packet, else the encoder's."""
    out = []
    for n, pcm in enumerate(frames):
        packet = opus.settled_silence(pcm, n * 960)
        out.append(packet if packet is not None else opus.encode(pcm, n * 960))
    return out


def _decode(packets: list[Packet]) -> np.ndarray:
    decoder = CodecContext.create("libopus", "r")
    decoder.format, decoder.layout, decoder.sample_rate = "s16", "stereo", 48_000
    frames = [f for p in packets for f in decoder.decode(Packet(bytes(p)))]
    return np.concatenate([f.to_ndarray().reshape(-1, 2)[:, 0] for f in frames]).astype(float)


def test_a_settled_silence_is_sent_again_and_the_speech_after_it_sounds_the_same() -> None:
    speech, silent = 25, 300  # half a second of voice, six seconds of nothing
    frames = _voice(speech, 1) + [SILENCE] * silent + _voice(speech, 2)
    track_opus, every_frame = OpusPackets(), OpusPackets()
    sent = _send(track_opus, frames)
    reference = [every_frame.encode(pcm, n * 960) for n, pcm in enumerate(frames)]

    assert [p.pts for p in sent] == [960 * n for n in range(len(frames))]
    # the silence went through the encoder only until it settled (a few dozen frames)
    assert every_frame.frames_encoded == len(frames)
    assert 2 * speech < track_opus.frames_encoded < 2 * speech + 40, track_opus.frames_encoded
    # every silent packet is the one the encoder says for it when it is fed every frame
    silence = slice(speech, speech + silent)
    assert [bytes(p) for p in sent[silence]] == [bytes(p) for p in reference[silence]]
    assert len({bytes(p) for p in sent[speech + 40 : speech + silent]}) == 1

    # the speech after it decodes as it does from the encoder that never skipped a frame
    heard, expected = _decode(sent), _decode(reference)
    after = slice(-2 * speech * 960, None)
    error = heard[after] - expected[after]
    snr = 10 * np.log10(np.mean(expected[after] ** 2) / np.mean(error**2))
    assert snr > 20, snr  # as alike as two encodings of one voice (~30 dB): not a glitch
    assert np.sqrt(np.mean(heard[after] ** 2)) > 2000  # and it is the voice, not silence


def test_only_a_silent_frame_after_a_settled_silence_skips_the_encoder() -> None:
    opus = OpusPackets()
    assert opus.settled_silence(SILENCE, 0) is None  # nothing said yet
    voice = _voice(1, 3)[0]
    n = 0
    while opus.settled_silence(SILENCE, n * 960) is None:
        opus.encode(SILENCE, n * 960)
        n += 1
        assert n < 100, "the encoder's silence never settled"
    assert opus.settled_silence(voice, n * 960) is None  # speech is always encoded
    opus.encode(voice, n * 960)
    assert opus.settled_silence(SILENCE, (n + 1) * 960) is None  # it must settle again


def test_an_idle_track_stops_encoding(monkeypatch: Any) -> None:
    monkeypatch.setattr("app.server.webrtc.output_track.FRAME_S", 0.001)
    track = OutputTrack()

    async def take(count: int) -> None:
        for _ in range(count):
            await track.recv()

    asyncio.run(take(60))
    encoded = track._opus.frames_encoded
    assert encoded < 60
    asyncio.run(take(60))
    assert track._opus.frames_encoded == encoded
