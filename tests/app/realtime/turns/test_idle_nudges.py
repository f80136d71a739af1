"""Idle nudges, alone: silence after an answer in, the exact events and the answer out."""

from __future__ import annotations

from app.protocol import server_events as se
from app.protocol.session_schema import TurnDetection
from app.realtime.conversation import Conversation, Item
from app.realtime.turns.idle import IdleTimer
from app.realtime.turns.idle_nudges import IdleNudges
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeResponses

NUDGE = [
    se.InputAudioTimeoutTriggered,
    se.InputAudioCommitted,
    se.ItemCreated,
    se.TranscriptionCompleted,
]


class NudgeHarness(Harness):
    """An answer that finished playing at t=10 s, then input heard from 160_000 on."""

    def __init__(self) -> None:
        super().__init__()
        self.timer = IdleTimer(max_nudges=1)
        self.timer.answered(plays_until=10.0)
        self.conversation = Conversation()
        self.conversation.add(Item(id="answer_1", role="assistant", text="It is blue."))
        self.responses = FakeResponses()
        self.nudges = IdleNudges(self.timer, self.conversation, self.responses, self.emit)

    def heard(self, seconds: float, td: TurnDetection, show_transcripts: bool = True) -> bool:
        """Silence from 160_000 for `seconds`, arriving as it is spoken."""
        end = 160_000 + int(seconds * 16_000)
        return self.nudges.heard(160_000, end, 10.0 + seconds, td, show_transcripts)


def test_silence_as_long_as_the_timeout_is_committed_and_answered() -> None:
    h = NudgeHarness()
    td = TurnDetection(idle_timeout_ms=5000)
    assert not h.heard(4.99, td) and h.events == []
    assert h.heard(5.0, td)
    assert h.types == NUDGE
    triggered, committed, created, completed = h.events
    assert created["item"]["id"] == triggered["item_id"]
    assert (triggered["audio_start_ms"], triggered["audio_end_ms"]) == (10_000, 15_000)
    assert triggered["item_id"] == committed["item_id"] == completed["item_id"]
    assert committed["previous_item_id"] == "answer_1" and completed["transcript"] == ""
    assert [(i.role, i.text) for i in h.conversation.items][-1] == ("user", "")
    assert [a.idle_ms for a in h.responses.started] == [5000]


def test_no_transcript_event_or_answer_when_they_are_off() -> None:
    h = NudgeHarness()
    td = TurnDetection(idle_timeout_ms=5000, create_response=False)
    assert h.heard(6.0, td, show_transcripts=False)
    assert h.types == NUDGE[:3] and h.responses.started == []


def test_no_timeout_no_nudge_and_at_most_max_nudges() -> None:
    h = NudgeHarness()
    assert not h.heard(60.0, TurnDetection())  # idle_timeout_ms unset
    td = TurnDetection(idle_timeout_ms=5000)
    assert h.heard(6.0, td)
    h.timer.answered(plays_until=10.0)  # the nudge was answered: armed again
    assert not h.heard(6.0, td)  # one nudge in a row at most
    assert h.types == NUDGE
