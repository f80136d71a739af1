"""The decision on speech over a paused answer, from scripted transcripts and positions."""

from __future__ import annotations

import pytest

from app.realtime.turns.interruption import Interruption

SECOND = 16_000


def decision() -> Interruption:
    return Interruption("item_1", timeout=SECOND * 3 // 2)


@pytest.mark.parametrize(
    ("text", "language", "verdict"),
    [
        ("Uh-huh.", "en", "backchannel"),
        ("Yeah.", "en", "backchannel"),
        ("Okay.", "en", "backchannel"),
        ("嗯。", "zh", "backchannel"),
        ("好的", "zh", "backchannel"),
        ("", "en", "no_words"),  # a cough, a knock
        (" you", "en", "no_words"),  # a breath, as Whisper hears it
        ("(coughs)", "en", "no_words"),
        ("Stop.", "en", "interrupt"),
        ("What about the knight?", "en", "interrupt"),
        ("不对，北京呢？", "zh", "interrupt"),
    ],
)
def test_a_whole_pass_decides(text: str, language: str, verdict: str) -> None:
    assert decision().heard(text, language) == verdict


def test_partial_words_interrupt_only_when_too_long_for_a_backchannel() -> None:
    d = decision()
    assert d.partial("Yeah") == "wait"  # may be "yeah, yeah", may go on
    assert d.partial("Yeah, but what about the") == "interrupt"
    assert d.heard("Yeah.", "en") == "interrupt"  # final: once interrupted, it stays so


def test_a_partial_pass_looping_on_one_acknowledgement_does_not_interrupt() -> None:
    """Whisper loops on a short sound ("Yeah. Yeah. Yeah. Yeah. Yeah." for one "yeah"):
    past the length bound in words, still one backchannel."""
    d = decision()
    assert d.partial("Yeah. Yeah. Yeah. Yeah. Yeah. Yeah.") == "wait"
    assert d.heard("Yeah. Yeah. Yeah. Yeah. Yeah.", "en") == "backchannel"


def test_no_words_by_the_timeout_after_the_speech_ended_resume() -> None:
    d = decision()
    assert d.waited(10 * SECOND) == "wait"  # still speaking: no timeout runs
    d.speech_ended(10 * SECOND)
    assert d.waited(11 * SECOND) == "wait"
    d.speech_resumed()  # the speech went on: the wait starts again at its next end
    assert d.waited(12 * SECOND) == "wait"
    d.speech_ended(12 * SECOND)
    assert d.waited(12 * SECOND + SECOND * 3 // 2) == "no_words"
    assert d.resumes


def test_words_after_a_resume_still_interrupt() -> None:
    d = decision()
    assert d.heard("Yeah.", "en") == "backchannel"
    assert d.partial("yeah but tell me about paris") == "interrupt"
    assert not d.resumes


def test_a_pass_still_running_at_the_timeout_is_waited_for_up_to_the_grace() -> None:
    running = [True]
    d = Interruption("item_1", SECOND * 3 // 2, 3 * SECOND, lambda: running[0])
    d.speech_ended(10 * SECOND)
    assert d.waited(12 * SECOND) == "wait"  # past the timeout: the pass's words decide
    running[0] = False  # it ended without deciding (a failed pass): the timeout holds
    assert d.waited(12 * SECOND) == "no_words"
    d = Interruption("item_1", SECOND * 3 // 2, 3 * SECOND, lambda: True)
    d.speech_ended(10 * SECOND)
    assert d.waited(14 * SECOND + SECOND // 2 - 1) == "wait"
    assert d.waited(14 * SECOND + SECOND // 2) == "no_words"  # stuck: resume
