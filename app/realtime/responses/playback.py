"""Answer audio the server itself plays (a WebRTC track), as the session sees it.

Over the WebSocket the client plays the audio deltas and the server can only estimate
what was heard from its pacing (the client tells it with `conversation.item.truncate`).
Over WebRTC the server's outgoing track plays the audio: it knows exactly how much of an
answer has gone out, and stopping it drops what was queued at once. A response asks the
session's `Playback` for a `Playout` of its own and hands it its audio; the track reports
`output_audio_buffer.*` events through the sink it was attached to.
"""

from __future__ import annotations

from typing import Protocol

from app.protocol.session_schema import AudioFormat
from app.realtime.handoff import EventSink


class Playout(Protocol):
    """One answer's audio on the server's track."""

    def play(self, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        """Queue `piece` (in `fmt`), which starts `at_ms` into the answer's audio."""
        ...

    def played_ms(self) -> float | None:
        """How far into the answer's audio the track has played; None before any."""
        ...

    def stop(self) -> None:
        """Drop what is queued of this answer, at once (`output_audio_buffer.cleared`)."""
        ...

    def finish(self) -> None:
        """Nothing more comes: `output_audio_buffer.stopped` once the rest has played."""
        ...


class Playback(Protocol):
    """The session's outgoing audio track."""

    def attach(self, emit: EventSink) -> None:
        """Where its `output_audio_buffer.*` events go (the session's outbox)."""
        ...

    def playout(self, response_id: str) -> Playout:
        """A playout for the answer `response_id` (one plays at a time)."""
        ...

    def hold(self) -> None:
        """Send silence at once and keep what is queued: speech began over the answer."""
        ...

    def release(self) -> None:
        """Play on from where `hold` stopped (the speech was no barge-in)."""
        ...

    def clear(self) -> None:
        """The client's `output_audio_buffer.clear`: stop whatever plays, and confirm it
        (`output_audio_buffer.cleared`, naming the last answer that played, if any)."""
        ...
