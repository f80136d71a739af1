"""The state of a spoken turn: how echo checks add up."""

from __future__ import annotations

from app.realtime.turns.transcriber import TurnTranscriber
from app.realtime.turns.turn import SpeechTurn
from tests.fakes import ScriptedASR


def test_speech_heard_as_echo_needs_two_checks_to_become_the_users() -> None:
    turn = SpeechTurn("item", 0, TurnTranscriber(ScriptedASR([""]), lambda _d: None))
    assert [turn.note_echo(v) for v in (True, False, True, False, False)] == [
        True,
        True,  # one low score: still echo
        True,
        True,
        False,  # two in a row: the user's
    ]
    fresh = SpeechTurn("item", 0, TurnTranscriber(ScriptedASR([""]), lambda _d: None))
    assert fresh.note_echo(False) is False  # never heard as echo: the first check decides
