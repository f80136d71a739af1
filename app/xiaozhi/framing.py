"""The binary frames of the xiaozhi WebSocket (main/protocols/protocol.h).

Version 1 is a bare Opus packet. Version 2 prefixes 16 bytes, big-endian: version (u16),
type (u16: 0 Opus, 1 JSON), reserved (u32), timestamp in ms (u32), payload size (u32).
Version 3 prefixes 4: type (u8), reserved (u8), payload size (u16).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

VERSIONS = (1, 2, 3)
OPUS, JSON = 0, 1
V2 = struct.Struct(">HHIII")
V3 = struct.Struct(">BBH")
# An Opus packet is at most 1275 bytes a frame, 6 frames a packet (RFC 6716, 3.2.5).
MAX_OPUS_BYTES = 1275 * 6


class FrameError(ValueError):
    """A binary frame that is not what its protocol version says; the message says why."""


@dataclass(frozen=True)
class Frame:
    type: int  # OPUS or JSON
    payload: bytes
    timestamp_ms: int = 0


def decode(data: bytes, version: int) -> Frame:
    """The frame in `data` as protocol `version` frames it, or a FrameError."""
    if version == 2:
        if len(data) < V2.size:
            raise FrameError(f"a version 2 frame needs its 16-byte header; got {len(data)} bytes")
        got_version, kind, _, timestamp, size = V2.unpack_from(data)
        if got_version != 2:
            raise FrameError(f"a version 2 frame's header says version {got_version}")
        frame = Frame(kind, data[V2.size :], timestamp)
    elif version == 3:
        if len(data) < V3.size:
            raise FrameError(f"a version 3 frame needs its 4-byte header; got {len(data)} bytes")
        kind, _, size = V3.unpack_from(data)
        frame = Frame(kind, data[V3.size :])
    else:
        frame = Frame(OPUS, data)
        size = len(data)
    if size != len(frame.payload):
        raise FrameError(
            f"the version {version} header says {size} payload bytes; {len(frame.payload)} came"
        )
    if frame.type not in (OPUS, JSON):
        raise FrameError(f"unknown frame type {frame.type} (0: Opus, 1: JSON)")
    if frame.type == OPUS:
        _check_opus(frame.payload)
    return frame


def _check_opus(payload: bytes) -> None:
    if not payload:
        raise FrameError("an empty Opus frame")
    if len(payload) > MAX_OPUS_BYTES:
        raise FrameError(f"an Opus frame of {len(payload)} bytes (at most {MAX_OPUS_BYTES})")
    if payload[:1] in (b"{", b"["):
        try:
            json.loads(payload)
        except ValueError:
            return  # an Opus packet whose first byte happens to be "{"
        raise FrameError("JSON came in a binary frame, where Opus belongs; send it as text")


def encode(payload: bytes, version: int, timestamp_ms: int = 0) -> bytes:
    """`payload` (one Opus packet) framed as protocol `version` frames it."""
    if version == 2:
        return V2.pack(2, OPUS, 0, timestamp_ms & 0xFFFFFFFF, len(payload)) + payload
    if version == 3:
        return V3.pack(OPUS, 0, len(payload)) + payload
    return payload
