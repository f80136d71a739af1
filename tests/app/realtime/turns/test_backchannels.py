"""What counts as a backchannel (the answer goes on) and what holds no words at all."""

from __future__ import annotations

import pytest

from app.realtime.turns.backchannels import BACKCHANNELS, MAX_UNITS, has_words, is_backchannel


@pytest.mark.parametrize(
    ("text", "language", "backchannel"),
    [
        ("Uh-huh.", "en", True),
        ("Mm-hmm.", "en", True),
        ("mm-hm", "en", True),
        ("Mhm.", "en", True),
        ("Yeah.", "en", True),
        ("Yeah, yeah.", "en", True),
        ("Right.", "en", True),
        ("Okay.", "en", True),
        ("OK", "en", True),
        ("Oh, okay.", "en", True),
        ("I see.", "en", True),
        ("Mm-m.", "en", True),  # a hum however Whisper spells it
        ("Mmm.", None, True),
        ("Hmm, hmm.", "en", True),
        ("Mh.", "zh", True),
        ("Ham.", "en", False),  # a word that only looks like one
        ("Hum.", "en", False),
        ("嗯。", "zh", True),
        ("嗯嗯", "zh", True),
        ("对。", "zh", True),
        ("对对对", "zh", True),
        ("好的。", "zh", True),
        ("是的，是的。", "zh", True),
        ("好的", None, True),  # no language told: every list
        ("Yeah.", None, True),
        ("No.", "en", False),  # objects
        ("Wait.", "en", False),
        ("Stop.", "en", False),
        ("What?", "en", False),
        ("Yeah, but what about the dragon?", "en", False),
        ("Okay, tell me about Paris instead.", "en", False),
        ("I see the sea.", "en", False),
        ("yeah yeah yeah yeah yeah", "en", True),  # said again in a row: once
        ("Yeah. Yeah. Yeah. Yeah. Yeah.", "en", True),  # Whisper looping on one "yeah"
        ("Uh-huh. Uh-huh. Uh-huh. Uh-huh. Uh-", "en", True),
        ("yeah okay right sure got it", "en", False),  # five of them: past the bound
        ("yeah yeah okay okay right right sure sure got it", "en", False),
        ("不对", "zh", False),
        ("好的，那北京呢？", "zh", False),
        ("", "en", False),
        ("(coughs)", "en", False),
    ],
)
def test_backchannels(text: str, language: str | None, backchannel: bool) -> None:
    assert is_backchannel(text, language) is backchannel


def test_every_listed_phrase_is_a_backchannel_within_the_bound() -> None:
    for language, phrases in BACKCHANNELS.items():
        for phrase in phrases:
            assert is_backchannel(phrase, language), (language, phrase)
    assert MAX_UNITS >= 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", False),
        ("   ", False),
        (".", False),
        ("(coughs)", False),
        ("[BLANK_AUDIO]", False),
        ("*breathing*", False),
        ("♪", False),
        (" you", False),  # what Whisper makes of a breath
        ("Thank you.", False),
        # whisper-base's zh pass over espeak-ng's "好的": zero-width joiners and punctuation
        ("\u200d\u200d\u200d!\u200d\u200d。\u200d。\u200d\u200d", False),
        ("3-3-4-4-4-4-4-4-4-", False),  # whisper-base looping over espeak-ng's "是的"
        ("3-2-1-1-1-1-1-1-1-", False),
        ("1 2 3 4 5 6", True),  # counting is words
        ("3 3 4", True),  # too short to be a loop
        ("no no no no no no", True),  # a loop of words is still words
        ("Uh-huh.", True),
        ("Stop.", True),
        ("嗯", True),
        ("what about the knight", True),
    ],
)
def test_words(text: str, words: bool) -> None:
    assert has_words(text) is words
