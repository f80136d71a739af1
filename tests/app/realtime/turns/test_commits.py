"""Committed turns, alone: the user item, the final transcript and the answer (or none),
exact events out."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from app.protocol import server_events as se
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import TurnTiming
from app.realtime.turns.barge_in import BargeIn
from app.realtime.turns.commits import Commits
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import CommittedTurn, SpeechTurn
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeAnswer, FakeResponses
from tests.fakes import ScriptedASR

COMMITTED = [se.InputAudioCommitted, se.ItemCreated]
TRANSCRIBED = se.TranscriptionCompleted
INTERRUPTION = se.Interruption


class BrokenASR(ScriptedASR):
    async def run(
        self, audio_16k: np.ndarray, prefix: str | None = None, prompt: str | None = None, **_: Any
    ) -> Any:
        raise RuntimeError("the ASR broke")


class CommitHarness(Harness):
    def __init__(self, text: str, responding: bool = False, asr: ScriptedASR | None = None) -> None:
        tasks = Tasks()
        super().__init__(tasks.snapshot)
        self.asr = asr or ScriptedASR([text])
        self.conversation = Conversation()
        self.responses = FakeResponses(responding=responding)
        self.barge_in = BargeIn(self.responses, self.emit, tasks, 1.5)
        self.commits = Commits(self.conversation, self.responses, self.emit, self.barge_in, tasks)

    def turn(self, paused_an_answer: bool = False) -> CommittedTurn:
        transcriber = TurnTranscriber(self.asr, lambda _delta: None)
        interruption = None
        if paused_an_answer:
            spoken = SpeechTurn("item_1", 0, transcriber, confirmed=True)
            self.barge_in.pause(spoken, lambda: "en")
            interruption = spoken.interruption
        item = Item(id="item_1", role="user", audio=True)
        audio = np.zeros(16_000, np.float32)
        return CommittedTurn(
            item, audio, 16_000, TurnTiming(0.0), True, transcriber, interruption=interruption
        )

    def commit(self, turn: CommittedTurn, auto_respond: bool = True, show: bool = True) -> None:
        self.commits.commit(turn, auto_respond=auto_respond, show_transcripts=show)


def test_a_turn_joins_the_conversation_is_transcribed_and_answered() -> None:
    h = CommitHarness("hello there")
    turn = h.turn()
    events = asyncio.run(h.run(lambda: h.commit(turn), expect=[*COMMITTED, TRANSCRIBED]))
    assert events[2]["transcript"] == "hello there" and events[2]["usage"]["seconds"] == 1.0
    assert [(i.id, i.text) for i in h.conversation.items] == [("item_1", "hello there")]
    (answer,) = h.responses.started
    assert turn.answer is answer and turn.task is not None and turn.task.done()


def test_without_auto_respond_or_transcripts_less_comes_out() -> None:
    h = CommitHarness("hello there")
    asyncio.run(h.run(lambda: h.commit(h.turn(), auto_respond=False, show=False), expect=COMMITTED))
    assert h.responses.started == [] and h.conversation.items[0].text == "hello there"


def test_a_backchannel_over_an_answer_is_kept_unanswered() -> None:
    h = CommitHarness("Uh-huh.", responding=True)
    turn = h.turn(paused_an_answer=True)
    asyncio.run(h.run(lambda: h.commit(turn), expect=[*COMMITTED, TRANSCRIBED, INTERRUPTION]))
    assert [e["verdict"] for e in h.of_type(INTERRUPTION)] == ["wait", "backchannel"]
    assert h.responses.started == [] and h.responses.playing.resumes == 1


def test_words_over_an_answer_cancel_it_before_the_new_answer_starts() -> None:
    h = CommitHarness("Tell me about Paris instead.", responding=True)
    turn = h.turn(paused_an_answer=True)
    asyncio.run(h.run(lambda: h.commit(turn), expect=[*COMMITTED, TRANSCRIBED, INTERRUPTION]))
    assert h.responses.playing.cancelled == "turn_detected"
    assert len(h.responses.started) == 1


def test_a_failed_pass_is_reported_and_its_held_early_answer_dropped() -> None:
    h = CommitHarness("", asr=BrokenASR([]))
    turn = h.turn()
    turn.early = early = FakeAnswer("hello")
    failed = se.TranscriptionFailed
    events = asyncio.run(h.run(lambda: h.commit(turn), expect=[*COMMITTED, failed]))
    assert events[2]["error"]["code"] == "asr_failed"
    assert early.discarded and h.responses.started == [] and turn.item.ready.is_set()


def test_after_close_no_answer_starts() -> None:
    async def main(h: CommitHarness) -> None:
        h.commit(h.turn())
        h.commits.close()
        await h.settle()

    h = CommitHarness("hello there")
    asyncio.run(main(h))
    assert h.types == [*COMMITTED, TRANSCRIBED] and h.responses.started == []
