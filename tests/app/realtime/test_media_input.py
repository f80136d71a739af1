"""A media track's 24 kHz PCM16 taken in as the session's input format."""

from __future__ import annotations

import base64

import numpy as np

from app.protocol.session_schema import AudioFormat
from app.realtime.media_input import track_audio

TEN_MS = (np.sin(np.arange(240) / 5) * 8000).astype("<i2").tobytes()  # 10 ms at 24 kHz


def test_pcm_at_the_track_s_rate_passes_as_it_is() -> None:
    assert base64.b64decode(track_audio(TEN_MS, AudioFormat())) == TEN_MS


def test_another_format_is_resampled_and_encoded() -> None:
    pcm16k = base64.b64decode(track_audio(TEN_MS, AudioFormat(type="audio/pcm", rate=16000)))
    ulaw = base64.b64decode(track_audio(TEN_MS, AudioFormat(type="audio/pcmu")))
    assert (len(pcm16k), len(ulaw)) == (160 * 2, 80)  # 10 ms: 160 samples, 80 bytes of G.711
