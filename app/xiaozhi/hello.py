"""The hello exchange that opens a device's audio channel (docs/websocket.md, 1.3-1.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.xiaozhi.framing import VERSIONS

OPUS_RATES = (8000, 12000, 16000, 24000, 48000)  # what libopus encodes and decodes
FRAME_MS = (10, 20, 40, 60, 80, 100, 120)
SERVER_RATE = 24000  # the session's PCM rate: answers are encoded without resampling
SERVER_FRAME_MS = 60


class HelloError(ValueError):
    """A hello the server cannot honour; the message says what to change."""


@dataclass(frozen=True)
class DeviceHello:
    version: int
    sample_rate: int
    frame_ms: int
    mcp: bool

    @classmethod
    def parse(cls, message: Any, header_version: int) -> DeviceHello:
        if not isinstance(message, dict) or message.get("type") != "hello":
            raise HelloError('the first message must be the device\'s {"type": "hello", ...}')
        transport = message.get("transport", "websocket")
        if transport != "websocket":
            raise HelloError(f"transport '{transport}' is not served here; use 'websocket'")
        version = message.get("version", header_version)
        if version not in VERSIONS:
            raise HelloError(f"protocol version {version!r} is unknown; use 1, 2 or 3")
        params = message.get("audio_params") or {}
        if not isinstance(params, dict):
            raise HelloError("audio_params must be an object")
        fmt = params.get("format", "opus")
        if fmt != "opus":
            raise HelloError(f"audio format '{fmt}' is not supported; send 'opus'")
        rate = params.get("sample_rate", 16000)
        if rate not in OPUS_RATES:
            raise HelloError(f"sample_rate {rate!r} is not an Opus rate; use one of {OPUS_RATES}")
        channels = params.get("channels", 1)
        if channels != 1:
            raise HelloError(f"{channels!r} channels: send mono (channels 1)")
        frame_ms = params.get("frame_duration", 60)
        if frame_ms not in FRAME_MS:
            raise HelloError(f"frame_duration {frame_ms!r} ms is not an Opus frame; use 60")
        features = message.get("features") or {}
        mcp = isinstance(features, dict) and features.get("mcp") is True
        return cls(version, rate, frame_ms, mcp)


def server_hello(session_id: str) -> dict[str, Any]:
    return {
        "type": "hello",
        "transport": "websocket",
        "session_id": session_id,
        "audio_params": {
            "format": "opus",
            "sample_rate": SERVER_RATE,
            "channels": 1,
            "frame_duration": SERVER_FRAME_MS,
        },
    }
