"""Continued turns, alone: which speech continues the last turn, and what continuing it
deletes, stops and hands on (exact events out)."""

from __future__ import annotations

import asyncio

import numpy as np

from app.protocol import server_events as se
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import TurnTiming
from app.realtime.turns.continuation import Continuation
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import CommittedTurn, SpeechTurn
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeAnswer, FakeResponses
from tests.fakes import ScriptedASR

WINDOW = 24_000  # 1.5 s
DELETED = se.ItemDeleted


class ContinuationHarness(Harness):
    def __init__(self) -> None:
        super().__init__()
        self.conversation = Conversation()
        self.responses = FakeResponses()
        self.merges: list[str] = []
        self.continuation = Continuation(
            self.conversation, self.responses, self.emit, WINDOW, self.merges.append
        )

    def committed(self, item_id: str = "item_1", *, vad: bool = True) -> CommittedTurn:
        """A turn of one second, committed at 40_000 (its item in the conversation)."""
        item = Item(id=item_id, role="user", text="and so", audio=True)
        self.conversation.add(item)
        transcriber = TurnTranscriber(ScriptedASR([]), lambda _delta: None)
        transcriber.agreement.update("and so")
        transcriber.agreement.update("and so")  # agreed twice: confirmed
        audio = np.ones(16_000, np.float32)
        turn = CommittedTurn(item, audio, 40_000, TurnTiming(0.0), vad, transcriber)
        self.continuation.committed(turn)
        return turn


def speech(start: int) -> SpeechTurn:
    return SpeechTurn("item_2", start, TurnTranscriber(ScriptedASR([]), lambda _delta: None))


def test_speech_within_the_window_continues_the_last_turn() -> None:
    h = ContinuationHarness()
    h.committed()
    assert h.continuation.continues(40_000 + WINDOW)
    assert not h.continuation.continues(40_000 + WINDOW + 1)


def test_a_shown_answer_a_manual_commit_or_forgetting_ends_the_chance() -> None:
    h = ContinuationHarness()
    h.committed().answer = FakeAnswer(None, shown=True)
    assert not h.continuation.continues(41_000)
    h.committed("item_3", vad=False)
    assert not h.continuation.continues(41_000)
    h.committed("item_4")
    h.continuation.forget()
    assert not h.continuation.continues(41_000) and h.continuation.last is None


def test_continuing_deletes_the_turn_and_its_unseen_answer_and_hands_on_its_audio() -> None:
    async def main(h: ContinuationHarness, turn: SpeechTurn) -> list[object]:
        last = h.committed()
        last.answer = FakeAnswer(None)  # generating, unseen
        last.early = early = FakeAnswer("and so")
        h.conversation.add(Item(id="answer_1", role="assistant", text="So?"))
        events = await h.run(h.continuation.continue_into(turn, "server_vad"), expect=[DELETED] * 2)
        assert early.discarded
        assert turn.carry is not None and turn.carry[1] == 40_000
        assert turn.carry[0] is last.audio
        assert turn.transcriber.agreement is last.transcriber.agreement
        return events

    h = ContinuationHarness()
    turn = speech(45_000)
    events = asyncio.run(main(h, turn))
    assert [e["item_id"] for e in events] == ["item_1", "answer_1"]
    assert h.conversation.items == [] and h.merges == ["server_vad"]
    assert h.responses.interrupts == ["turn_detected"]
    assert h.continuation.last is None


def test_speech_past_the_window_continues_nothing() -> None:
    h = ContinuationHarness()
    last = h.committed()
    turn = speech(40_000 + WINDOW + 1)
    asyncio.run(h.run(h.continuation.continue_into(turn, "server_vad"), expect=[]))
    assert turn.carry is None and h.merges == [] and h.continuation.last is last
    assert [i.id for i in h.conversation.items] == ["item_1"]


def test_a_finished_answer_is_not_interrupted_again() -> None:
    h = ContinuationHarness()
    h.committed().answer = FakeAnswer(None, done=True)
    asyncio.run(
        h.run(h.continuation.continue_into(speech(41_000), "semantic_vad"), expect=[DELETED])
    )
    assert h.responses.interrupts == [] and h.merges == ["semantic_vad"]


def _finished(h: ContinuationHarness, said: str) -> CommittedTurn:
    """The last turn, its final pass done: it heard `said`."""
    last = h.committed()
    last.transcriber.asr = ScriptedASR([said])
    asyncio.run(last.transcriber.finish(last.audio, last.end_sample))
    return last


def test_speech_soon_after_a_turn_is_decoded_with_its_words_as_the_context() -> None:
    """Bug: a sentence a pause cut into two turns had its second half decoded on its own,
    as if nothing had been said before it."""
    h = ContinuationHarness()
    h.continuation.context_window = 5 * 16_000  # off by default (CONTEXT_WINDOW_S)
    _finished(h, "Printing, in the only sense with which we are at present concerned,")
    turn = speech(40_000 + WINDOW + 1)  # past the merge window: a turn of its own
    asyncio.run(h.run(h.continuation.continue_into(turn, "server_vad"), expect=[]))
    asr = ScriptedASR(["differs from most if not from all the arts"])
    turn.transcriber.asr = asr
    asyncio.run(turn.transcriber.finish(np.ones(16_000, np.float32), 80_000))
    assert asr.contexts == ["Printing, in the only sense with which we are at present concerned,"]
    assert turn.transcriber.before is None  # read once: the turn before is let go
    # ... and the turn after that one hears both
    h.continuation.committed(
        CommittedTurn(
            Item(id="item_2", role="user"),
            np.ones(16_000, np.float32),
            80_000,
            TurnTiming(0.0),
            True,
            turn.transcriber,
        )
    )
    third = speech(80_000 + WINDOW + 1)
    asyncio.run(h.run(h.continuation.continue_into(third, "server_vad"), expect=[]))
    assert third.transcriber.words_before() == (
        "Printing, in the only sense with which we are at present concerned, "
        "differs from most if not from all the arts"
    )


def test_speech_long_after_a_turn_or_after_a_manual_commit_has_no_context() -> None:
    h = ContinuationHarness()
    h.continuation.context_window = 5 * 16_000
    _finished(h, "and so my fellow Americans")
    late = speech(40_000 + h.continuation.context_window + 1)
    asyncio.run(h.run(h.continuation.continue_into(late, "server_vad"), expect=[]))
    assert late.transcriber.before is None and late.transcriber.words_before() is None
    h.committed("item_3", vad=False)
    soon = speech(41_000)
    asyncio.run(h.run(h.continuation.continue_into(soon, "server_vad"), expect=[]))
    assert soon.transcriber.words_before() is None
    h.continuation.context_window = 0  # the default: no turn is prompted
    h.committed("item_4")
    after = speech(40_000 + WINDOW + 1)  # past the merge window, just after the turn
    asyncio.run(h.run(h.continuation.continue_into(after, "server_vad"), expect=[]))
    assert after.transcriber.before is None


def test_a_continued_turn_is_decoded_as_one_piece_with_what_came_before_it() -> None:
    """The merged turn's final pass hears both halves' audio in one pass; its context is
    what came before the turn it continues, never that turn's own words (it would be
    prompted with the half it decodes again)."""
    h = ContinuationHarness()
    last = _finished(h, "and so my fellow")
    last.transcriber.context = "Good evening."
    turn = speech(45_000)
    asyncio.run(h.run(h.continuation.continue_into(turn, "server_vad"), expect=[DELETED]))
    asr = ScriptedASR(["and so my fellow Americans"])
    turn.transcriber.asr = asr
    assert turn.carry is not None
    both = np.concatenate([turn.carry[0], np.ones(8_000, np.float32)])
    asyncio.run(turn.transcriber.finish(both, 90_000))
    assert asr.calls == [(both.size, None)] and asr.contexts == ["Good evening."]
