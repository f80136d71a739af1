"""Speech over an answer, alone: the track's hold, the pause, and each verdict done to
the paused answer, with the exact `r1voice.interruption` events out."""

from __future__ import annotations

import asyncio

from app.protocol import server_events as se
from app.realtime.turns.backchannels import LISTENING_PROMPTS
from app.realtime.turns.barge_in import PASS_GRACE_S, BargeIn
from app.realtime.turns.interruption import Interruption
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import SpeechTurn
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeOutput, FakeResponses
from tests.fakes import ScriptedASR

INTERRUPTION = se.Interruption


class BargeInHarness(Harness):
    """An answer playing, the server's track, and the controller between them."""

    def __init__(self, responding: bool = True) -> None:
        tasks = Tasks()
        super().__init__(tasks.snapshot)
        self.responses = FakeResponses(responding=responding)
        self.output = FakeOutput(self.responses)
        self.barge_in = BargeIn(self.responses, self.emit, tasks, 1.5, self.output)
        transcriber = TurnTranscriber(ScriptedASR([]), lambda _delta: None)
        self.turn = SpeechTurn("item_1", 16_000, transcriber, confirmed=True)

    def verdicts(self) -> list[tuple[str, str]]:
        return [(e["item_id"], e["verdict"]) for e in self.of_type(INTERRUPTION)]

    def pause(self) -> None:
        self.barge_in.pause(self.turn, lambda: "en")


def test_speech_that_counts_pauses_the_answer_and_says_so() -> None:
    h = BargeInHarness()
    asyncio.run(h.run(h.pause, expect=[INTERRUPTION]))
    interruption = h.turn.interruption
    assert interruption is not None and h.barge_in.interruption is interruption
    assert (interruption.timeout, interruption.grace) == (24_000, int(PASS_GRACE_S * 16_000))
    assert h.responses.playing.paused
    assert h.turn.transcriber.prompt == LISTENING_PROMPTS["en"]
    assert h.verdicts() == [("item_1", "wait")]


def test_no_answer_playing_is_nothing_to_pause() -> None:
    h = BargeInHarness(responding=False)
    asked: list[str] = []

    def language() -> str:
        asked.append("asked")
        return "en"

    h.barge_in.pause(h.turn, language)
    assert h.events == [] and h.turn.interruption is None and asked == []
    assert h.turn.transcriber.prompt is None


def test_words_that_are_no_backchannel_cancel_the_answer_once() -> None:
    async def main(h: BargeInHarness) -> None:
        h.pause()
        h.barge_in.partial(h.turn.interruption, "tell me about Paris instead please")
        h.barge_in.heard(h.turn.interruption, "Tell me about Paris instead.", "en")  # decided
        await h.barge_in.cancelled()

    h = BargeInHarness()
    asyncio.run(main(h))
    assert h.verdicts() == [("item_1", "wait"), ("item_1", "interrupt")]
    assert h.responses.playing.cancelled == "turn_detected" and h.responses.playing.resumes == 0
    assert h.barge_in.interruption is None


def test_a_backchannel_resumes_the_answer_and_its_end_stops_the_wait() -> None:
    h = BargeInHarness()
    h.pause()
    interruption = h.turn.interruption
    h.barge_in.heard(interruption, "Uh-huh.", "en")
    assert h.responses.playing.resumes == 1 and not h.responses.playing.paused
    h.barge_in.ended(interruption, "Uh-huh.", "en")  # the same verdict: done once
    assert h.verdicts() == [("item_1", "wait"), ("item_1", "backchannel")]
    assert h.responses.playing.resumes == 1 and h.barge_in.interruption is None


def test_speech_going_on_after_a_resume_pauses_again_until_its_words_decide() -> None:
    async def main(h: BargeInHarness) -> None:
        h.pause()
        interruption = h.turn.interruption
        h.barge_in.heard(interruption, "", "en")  # "Wait," heard as nothing: resumed
        h.barge_in.speech_resumed(interruption)  # "... stop"
        assert h.responses.playing.pauses_again == 1
        h.barge_in.ended(interruption, "Wait, stop.", "en")
        await h.barge_in.cancelled()

    h = BargeInHarness()
    asyncio.run(main(h))
    assert [v for _, v in h.verdicts()] == ["wait", "no_words", "wait", "interrupt"]
    assert h.responses.playing.cancelled == "turn_detected"


def test_speech_resuming_while_still_undecided_changes_nothing() -> None:
    h = BargeInHarness()
    h.pause()
    h.barge_in.speech_resumed(h.turn.interruption)
    h.barge_in.speech_resumed(None)
    assert h.responses.playing.pauses_again == 0 and h.verdicts() == [("item_1", "wait")]


def test_no_words_by_the_timeout_resume_the_answer() -> None:
    h = BargeInHarness()
    h.pause()
    assert h.turn.interruption is not None
    h.turn.interruption.speech_ended(30_000)
    h.barge_in.waited(30_000 + 23_999)  # 1.5 s is 24_000 samples
    assert h.responses.playing.paused and h.verdicts() == [("item_1", "wait")]
    h.barge_in.waited(30_000 + 24_000)
    assert h.responses.playing.resumes == 1
    assert h.verdicts() == [("item_1", "wait"), ("item_1", "no_words")]


def test_the_words_of_another_turn_decide_nothing() -> None:
    h = BargeInHarness()
    h.pause()
    other = Interruption("item_2", timeout=24_000)  # a turn whose speech paused no answer
    h.barge_in.partial(other, "tell me about Paris instead please")
    h.barge_in.heard(other, "Stop.", "en")
    h.barge_in.ended(other, "Stop.", "en")
    assert h.verdicts() == [("item_1", "wait")] and h.barge_in.interruption is not None


def test_a_dropped_turn_resumes_the_answer_it_paused() -> None:
    h = BargeInHarness()
    h.pause()
    h.barge_in.ended(h.turn.interruption, None)
    assert [v for _, v in h.verdicts()] == ["wait", "no_words"]
    assert h.responses.playing.resumes == 1 and h.barge_in.interruption is None


def test_the_track_is_held_once_while_heard_and_released_once() -> None:
    h = BargeInHarness()
    h.barge_in.hold_while_heard(True)
    h.barge_in.hold_while_heard(True)
    assert h.output.calls == [("hold", False)]
    h.barge_in.hold_while_heard(False)
    h.barge_in.release_output()
    assert h.output.calls == [("hold", False), ("release", False)]
    assert h.events == []


def test_without_a_track_nothing_is_held() -> None:
    """Speech heard over an answer with no server track (a WebSocket client plays the
    audio itself): no hold, no event, and the answer is neither paused nor interrupted."""
    responses = FakeResponses(responding=True)
    emitted: list[object] = []
    barge_in = BargeIn(responses, emitted.append, Tasks(), 1.5)
    barge_in.hold_while_heard(True)
    barge_in.release_output()  # nothing to release: no error
    assert emitted == [] and responses.interrupts == []
    assert not responses.playing.paused and barge_in.interruption is None
