"""Backchannels: the short acknowledgements a listener says over an answer ("uh-huh",
"yeah", "嗯") to say "go on", not to take the turn.

Speech over an answer that is only these (one or a few of them, at most `MAX_UNITS`
text units) lets the answer go on (see interruption.py); anything else interrupts it.
One list a language; a turn heard in a language without a list (or in none) is checked
against all of them. "Yes", "sure", "exactly" are in: said over an answer they agree with
it. "No", "wait", "stop", "what" are not: they object or ask.
"""

from __future__ import annotations

import re
import unicodedata

from app.text_units import units

# At most this many units (words; Chinese characters count one each): "uh-huh",
# "yeah I see", "对对对", "是的是的"; longer speech says something.
MAX_UNITS = 4


def _phrases(listed: str) -> frozenset[str]:
    return frozenset(listed.split("|"))


BACKCHANNELS: dict[str, frozenset[str]] = {
    "en": _phrases(
        "uh huh|mm hm|mm hmm|mhm|mm|hmm|hm|uh|um|ah|oh|yeah|yes|yep|yup|yea|ya|right|okay|ok"
        "|alright|all right|i see|sure|got it|exactly|true|cool|nice|wow|really|indeed"
        "|of course|makes sense|gotcha"
    ),
    "zh": _phrases("嗯|嗯嗯|对|对的|好|好的|是|是的|没错|明白|哦|噢|啊|行|可以|好吧|了解|知道了"),
}

_ALL = frozenset().union(*BACKCHANNELS.values())
_LONGEST = max(len(phrase.split()) if " " in phrase else len(phrase) for phrase in _ALL)


def _tokens(text: str) -> list[str]:
    """Lower-case words without punctuation ("Uh-huh." -> ["uh", "huh"]; "嗯，对。" ->
    ["嗯", "对"], one a character). Invisible characters (zero-width joiners, controls:
    Unicode's "other") are no words either: Whisper writes runs of them for noise."""
    kept = "".join(
        " " if unicodedata.category(c)[0] in "PZSC" or c == "-" else c for c in text.lower()
    )
    return [unit for word in kept.split() for unit in units(word)]


def is_backchannel(text: str, language: str | None = None) -> bool:
    """Whether `text` is only acknowledgements (repeated or combined: "yeah yeah",
    "oh okay", "嗯嗯对"), within `MAX_UNITS`."""
    tokens = _tokens(text)
    if not tokens or len(units(text)) > MAX_UNITS:
        return False
    phrases = BACKCHANNELS.get(language or "", _ALL)
    # covered[i]: tokens[:i] is a sequence of phrases
    covered = [True] + [False] * len(tokens)
    for end in range(1, len(tokens) + 1):
        for start in range(max(0, end - _LONGEST), end):
            piece = tokens[start:end]  # Chinese phrases are written without spaces
            if covered[start] and {" ".join(piece), "".join(piece)} & phrases:
                covered[end] = True
                break
    return covered[-1]


_NON_SPEECH = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|[♪♫]")
# What Whisper writes for a breath or a knock when it must write something.
_NOISE = frozenset({"you", "thank you", "thanks for watching"})


def has_words(text: str) -> bool:
    """Whether a transcript holds words, not just Whisper's notes on noise ("(coughs)",
    "[BLANK_AUDIO]", "♪") or what it makes up from a breath ("you")."""
    tokens = _tokens(_NON_SPEECH.sub(" ", text))
    return bool(tokens) and " ".join(tokens) not in _NOISE
