"""Priming: each partial pass of the turn being spoken hands its words, their unsettled
end left out, to the session's responses, and only when an answer will follow by itself."""

from __future__ import annotations

from app.realtime.turns.priming import Priming
from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import SpeechTurn
from tests.app.realtime.turns.fakes import FakeResponses
from tests.fakes import ScriptedASR


def _turn(item_id: str = "item_1", confirmed: bool = True) -> SpeechTurn:
    transcriber = TurnTranscriber(ScriptedASR([]), lambda _delta: None)
    return SpeechTurn(item_id, 0, transcriber, confirmed=confirmed)


def test_the_words_heard_so_far_are_primed_without_their_unsettled_end() -> None:
    responses, turn = FakeResponses(), _turn()
    priming = Priming(responses, lambda: turn, lambda: True)
    priming.heard("item_1", " What is the capital of...", "en")
    priming.heard("item_1", "你好，请问今天", "zh")
    priming.heard("item_1", "Tell me a joke.", None)
    assert responses.primed == [
        ("What is the capital of", "en"),
        ("你好，请问今天", "zh"),
        ("Tell me a joke", None),
    ]


def test_nothing_is_primed_for_a_turn_that_will_not_be_answered_by_itself() -> None:
    turn = _turn()
    cases = [
        (FakeResponses(), lambda: _turn("item_2"), True, True),  # another turn is spoken now
        (FakeResponses(), lambda: None, True, True),  # the turn ended
        (FakeResponses(), lambda: _turn(confirmed=False), True, True),  # not yet the user's
        (FakeResponses(), lambda: turn, False, True),  # the client starts answers itself
        (FakeResponses(responding=True), lambda: turn, True, True),  # an answer runs
        (FakeResponses(), lambda: turn, True, False),  # R1VOICE_LLM_PRIME=0
    ]
    for responses, current, responds, enabled in cases:
        priming = Priming(responses, current, lambda responds=responds: responds, enabled)
        priming.heard("item_1", "What is the capital of", "en")
        priming.heard("item_1", " ... ", "en")  # nothing settled
        assert responses.primed == []
    responses = FakeResponses()
    Priming(responses, lambda: turn, lambda: True).heard("item_1", " ... ", "en")
    assert responses.primed == []
