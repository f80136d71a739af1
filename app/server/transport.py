"""What a Realtime session needs of its connection, whichever it is (WebSocket, WebRTC).

The session runner (session_runner.py) drives a session over a `Transport`: messages in,
stamped and handled in order; the session's events out; a close with a reason. Over the
WebSocket every message is an event; over WebRTC events come on the data channel and the
microphone's audio as `InputPcm` off the media track.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class InputPcm:
    """Microphone audio off a media track: PCM16 mono at 24 kHz."""

    pcm: bytes

    def __len__(self) -> int:
        return len(self.pcm)


Received = str | bytes | InputPcm  # an event (text, or bytes holding its JSON), or audio


class Transport(Protocol):
    async def receive(self) -> Received | None:
        """The next message; None once the peer has gone."""
        ...

    async def send(self, text: str) -> None:
        """Send one serialized event; waits while the peer's buffers are full."""
        ...

    async def close(self, code: int, reason: str) -> None:
        """End the connection (`code`: a WebSocket close code, said where it can be)."""
        ...
