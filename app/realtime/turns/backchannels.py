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

# Whisper's prompt for speech over an answer: a transcript styled like these, so a short
# murmur comes out as the acknowledgement it is and not as a near word. Measured on
# `bench conversation`'s sounds (Piper "Uh-huh." as "of", "Mm-hmm." as "in a month";
# whisper-base on espeak-ng's "好的" as "奥德", "是的" as "屁股"); real interruptions came
# out as the same words with it and without.
LISTENING_PROMPTS = {"en": "Mm-hmm. Uh-huh. Yeah. Right. Okay.", "zh": "嗯。对。好的。是的。"}
# A hum however Whisper spells it ("mm", "mmm", "hmm", "mhm", "mm-m"), in any language
_HUM = re.compile(r"h*m[mh]*")

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


def listening_prompt(language: str | None) -> str | None:
    """The prompt for transcribing speech over an answer in `language` (None: none)."""
    return LISTENING_PROMPTS.get(language or "")


def is_backchannel(text: str, language: str | None = None) -> bool:
    """Whether `text` is only acknowledgements (repeated or combined: "yeah yeah",
    "oh okay", "嗯嗯对"), within `MAX_UNITS`. A phrase said again in a row counts once:
    Whisper loops on a short sound ("Yeah. Yeah. Yeah. Yeah. Yeah." for one "yeah")."""
    tokens = _tokens(text)
    if not tokens:
        return False
    pieces = _phrases_of(tokens, BACKCHANNELS.get(language or "", _ALL))
    if pieces is None:
        return False
    said = [p for i, p in enumerate(pieces) if i == 0 or p != pieces[i - 1]]
    return sum(len(units(p)) for p in said) <= MAX_UNITS


def _phrases_of(tokens: list[str], phrases: frozenset[str]) -> list[str] | None:
    """`tokens` cut into listed phrases (the longest last phrase first), or None when some
    token is in none."""
    # cut[i]: where the last phrase of tokens[:i] starts, if tokens[:i] is all phrases
    cut: list[int | None] = [0] + [None] * len(tokens)
    for end in range(1, len(tokens) + 1):
        for start in range(max(0, end - _LONGEST), end):
            piece = tokens[start:end]  # Chinese phrases are written without spaces
            listed = {" ".join(piece), "".join(piece)} & phrases
            hum = end - start == 1 and _HUM.fullmatch(piece[0]) is not None
            if cut[start] is not None and (listed or hum):
                cut[end] = start
                break
    if cut[-1] is None:
        return None
    pieces, end = [], len(tokens)
    while end > 0:
        begin = cut[end]
        assert begin is not None  # every cut on the way back was reached
        pieces.append(" ".join(tokens[begin:end]))
        end = begin
    return pieces[::-1]


_NON_SPEECH = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|[♪♫]")
# What Whisper writes for a breath or a knock when it must write something.
_NOISE = frozenset({"you", "thank you", "thanks for watching"})


def has_words(text: str) -> bool:
    """Whether a transcript holds words, not just Whisper's notes on noise ("(coughs)",
    "[BLANK_AUDIO]", "♪"), what it makes up from a breath ("you"), or a loop of digits it
    writes for a short sound it cannot read (whisper-base on espeak-ng's "是的":
    "3-3-4-4-4-4-4-4-4-", "3-2-1-1-1-1-1-1-1-"; nobody says that over an answer)."""
    tokens = _tokens(_NON_SPEECH.sub(" ", text))
    return bool(tokens) and " ".join(tokens) not in _NOISE and not _digit_loop(tokens)


def _digit_loop(tokens: list[str]) -> bool:
    """Digits only, one of them repeated for at least half (counting is no loop)."""
    if len(tokens) < 6 or not all(t.isdigit() for t in tokens):
        return False
    return max(tokens.count(t) for t in set(tokens)) * 2 >= len(tokens)
