"""The early-answer gate: an answer started before the turn really ended stays unseen.

At the VAD's lull (see turns/vad_stream.py, `VADConfig.lull_ms`) the final transcription
starts, and when it finishes while the silence window still runs, the answer starts too,
on that early transcript. Until the turn really ends, the answer's events are held here and its audio
waits; then the gate is either released (the final transcript is the one answered) or
the answer is discarded without the client ever seeing it (speech resumed, or the final
transcript differs).
"""

from __future__ import annotations

import asyncio
import dataclasses

from app.protocol.server_events import ItemCreated, ServerEvent
from app.realtime.handoff import EventSink


class EventGate:
    """Passes events to `sink`, or holds them (in order) until `release()`."""

    def __init__(self, sink: EventSink, held: bool) -> None:
        self._sink = sink
        self._held: list[ServerEvent] | None = [] if held else None
        self.released = asyncio.Event()
        if not held:
            self.released.set()

    @property
    def holding(self) -> bool:
        return self._held is not None

    def emit(self, event: ServerEvent) -> None:
        if self._held is not None:
            self._held.append(event)
        else:
            self._sink(event)

    def release(self, previous_item_id: str | None) -> None:
        """Send what was held; the answer's item now follows the committed user item."""
        held, self._held = self._held or [], None
        for event in held:
            if isinstance(event, ItemCreated):
                event = dataclasses.replace(event, previous_item_id=previous_item_id)
            self._sink(event)
        self.released.set()
