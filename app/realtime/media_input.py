"""Microphone audio from a media track (WebRTC) taken in as the session's input: the
track's PCM16 mono at the protocol's 24 kHz, in the input format the session asked for,
as an `input_audio_buffer.append` would carry it."""

from __future__ import annotations

import base64

from app.audio import PROTOCOL_RATE, encode_audio, pcm16_to_float, resample
from app.protocol.session_schema import AudioFormat


def track_audio(pcm: bytes, fmt: AudioFormat) -> str:
    """`pcm` from the track as base64 in `fmt`."""
    if (fmt.type, fmt.rate) != ("audio/pcm", PROTOCOL_RATE):  # the client asked for another
        pcm = encode_audio(resample(pcm16_to_float(pcm), PROTOCOL_RATE, fmt.rate), fmt.type)
    return base64.b64encode(pcm).decode("ascii")
