"""Idle nudges: the silence after an answer, committed and answered (see idle.py).

Silence of `idle_timeout_ms` after an answer has played out is committed as an empty
user item and answered, in OpenAI's order of events.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.protocol import events
from app.protocol.server_events import InputAudioTimeoutTriggered, TranscriptionCompleted
from app.protocol.session_schema import TurnDetection
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink
from app.realtime.turns.committed import add_audio_item
from app.realtime.turns.idle import IdleTimer, Silence
from app.realtime.turns.turn import ResponseStarter


@dataclass
class IdleNudges:
    timer: IdleTimer
    conversation: Conversation
    responses: ResponseStarter
    emit: EventSink

    def heard(
        self,
        start: int,
        end: int,
        arrived_at: float,
        turn_detection: TurnDetection,
        show_transcripts: bool,
    ) -> bool:
        """Input [start, end) with no speech in it, while nothing is said or answered,
        reached the server at `arrived_at`: whether it nudged."""
        timeout_ms = turn_detection.idle_timeout_ms
        if timeout_ms is None:
            return False
        silence = self.timer.heard(start, end, arrived_at, timeout_ms)
        if silence is None:
            return False
        self._nudge(silence, turn_detection.create_response, show_transcripts)
        return True

    def _nudge(self, silence: Silence, respond: bool, show_transcripts: bool) -> None:
        """The user stayed silent after an answer: the silence is committed as a user item
        with an empty transcript (not transcribed: the VAD heard no speech in it, and
        Whisper makes words up from silence), then answered with a note that the user
        said nothing, when `respond` (create_response) is on."""
        item = Item(id=events.new_id("item"), role="user", text="", audio=True)
        self.emit(
            InputAudioTimeoutTriggered(
                audio_start_ms=silence.start_ms, audio_end_ms=silence.end_ms, item_id=item.id
            )
        )
        add_audio_item(self.conversation, self.emit, item)
        if show_transcripts:
            usage = {"type": "duration", "seconds": silence.ms / 1000}
            self.emit(TranscriptionCompleted(item_id=item.id, transcript="", usage=usage))
        if respond:
            self.responses.start(idle_ms=silence.ms)
