"""How a Whisper pass decodes: the encoder window fitted to the clip, the bound on its
tokens, beam or greedy, temperature 0, and the loops (`repeats`) that make WhisperASR
(asr.py) decode a pass again. Pure: no model here.
"""

from __future__ import annotations

import math
from typing import Any

from app.speech.whisper_loader import FRAMES_PER_S, WINDOW_S
from app.text_units import is_cjk_letter, join, units

# A clip shorter than Whisper's window is encoded over a window fitted to it (its length
# plus WINDOW_MARGIN_S, at least MIN_WINDOW_S) instead of 30 s of mostly padding: the
# encoder's cost follows the window.
# Below ~10 s tiny.en starts to loop ("What is the capital of France? What is the..."),
# which `repeats` catches and the full window then redoes. Measured in the README.
MIN_WINDOW_S = 12.0
# Other languages lose more to a short window and to greedy decoding. On the project's
# human Mandarin speech recordings, each heard after 0.1, 0.3 and 0.5 s of silence (189
# characters; whisper-base, quiet 2 cores, interleaved), the final pass misread:
#   window        12 s   15 s   20 s   30 s
#   greedy        9.0%   8.5%   7.9%   5.8%
#   beam 5        7.4%   4.8%   6.3%   4.2%   (faster-whisper alone, beam 5, 30 s: 4.2%)
# so a final pass over a turn not known to be English decodes with beam 5 (`final_beam`,
# R1VOICE_ASR_FINAL_BEAM) over 15 s at least: 0.47 s a pass, as long as greedy over 20 s
# took before the decoder moved to one thread (app/speech/whisper_loader.py). English and partial
# passes stay greedy: tiny.en's English gained nothing from a beam.
MIN_WINDOW_OTHER_S = 15.0
WINDOW_MARGIN_S = 2.0
# A window's text is bounded by what can be said in it: fast speech is ~6 tokens a second
# (English words, Chinese characters). Without a bound a hallucinating pass (robotic
# Mandarin heard as Thai) decoded to the 448-token limit at each of Whisper's fallback
# temperatures: 10 s for a 2 s question.
MAX_TOKENS_PER_S = 12
MAX_TOKENS_MARGIN = 24
# Segments Whisper is likely to have hallucinated from noise or silence.
NO_SPEECH_PROB_MAX = 0.6
# A turn over Whisper's window is decoded as faster-whisper decodes a long clip by
# itself: window after window, beam search, each window conditioned on the text before
# it. Greedy windows decoded each on its own were rejected (too repetitive, too unsure)
# more often and fell back to sampling, whose text invents words ("ask not what your
# country can do for you testify by you as well"); and the no-speech check above, made
# for a clip that starts with its speech, is not applied there: every segment of a window
# shares the window's no-speech probability, so it dropped or kept a whole window of
# words at once. faster-whisper's own check (a likely silence decoded poorly) remains.
LONG_FORM_BEAM = 5
# Every pass decodes at temperature 0 only. Whisper's fallback (sampling at rising
# temperatures when a pass looks repetitive or unsure) made a transcript random: the same
# short question came out as a different text on most passes (once a loop), and a long
# turn of one sentence said four times lost a sentence in some passes and not others.
# Loops are caught instead by `repeats` and decoded again over the full window.
TEMPERATURE = 0.0
# Languages (None: not given, mostly English) whose windows past the first are decoded
# without the text before them. Conditioned, a window of English could repeat the
# sentence it was shown: on an Intel Xeon with AMX, JFK's "ask what you can do for your
# country" came out once more in a 57 s turn (17 word errors in 139 against
# faster-whisper's 4). Mandarin needs the text before it: unconditioned, its windows
# lost their words (156 character errors in 185 against 36).
UNCONDITIONED = (None, "en")


# Over a window fitted to a turn, whisper-base ended a Mandarin turn of several sentences
# after its first pause: three human recordings joined with 0.4 s pauses (14.6 s) came
# out as the first sentence alone (50 of 63 characters lost), the full window heard all
# four sentences. A final pass of a turn not known to be English decodes with timestamps,
# and one whose last segment ends over EARLY_END_S before the audio does is decoded again
# over the full window (kept if it heard more words). English passes (tiny.en) did not
# stop early and stay without.
EARLY_END_S = 1.0
# A prompted pass Whisper decoded this unsurely is decoded again without the prompt: the
# thresholds faster-whisper's fallback uses (a mean token log-probability under -1, a
# gzip compression ratio over 2.4: repetitive text).
LOGPROB_MIN = -1.0
COMPRESSION_MAX = 2.4
# The previous turns' words a turn that follows them closely is prompted with: the last
# CONTEXT_UNITS words (Chinese characters) of them. Whisper reads up to 223 prompt tokens;
# a short prompt costs the decoder less and is as much of a hint.
CONTEXT_UNITS = 60


def context_prompt(*texts: str | None) -> str | None:
    """The words of the turns before (oldest first) as Whisper's initial prompt: their last
    CONTEXT_UNITS units; None when they said nothing."""
    said = units(join(t.strip() for t in texts if t and t.strip()))
    return join(said[-CONTEXT_UNITS:]) or None


def echoes(prompt: str | None, text: str, min_words: int = 4, min_cjk: int = 6) -> bool:
    """Whether `text` opens by repeating the prompt's words: its first `min_words` words
    (`min_cjk` Chinese characters) are a run of the prompt's. A window shown the text
    before it can decode that text again instead of its own audio."""
    if not prompt:
        return False
    said, shown = _words(text), _words(prompt)
    cjk = sum(bool(w) and is_cjk_letter(w[0]) for w in said) * 2 > len(said)
    n = min_cjk if cjk else min_words
    if len(said) < n:
        return False
    head = said[:n]
    return any(shown[i : i + n] == head for i in range(len(shown) - n + 1))


def _words(text: str) -> list[str]:
    return [w for w in (u.strip(".,!?;:。，！？；：、\"'").lower() for u in units(text)) if w]


def window_frames(samples: int, min_window_s: float) -> int:
    """Encoder frames for a clip of `samples` (16 kHz): fitted to it, at most Whisper's 30 s."""
    seconds = max(min_window_s, math.ceil(samples / 16_000 + WINDOW_MARGIN_S))
    return int(min(seconds, WINDOW_S) * FRAMES_PER_S)


def max_new_tokens(samples: int, prompted: bool = False) -> int:
    """What to ask faster-whisper for so that a window of this clip (16 kHz) decodes at
    most its bound (see MAX_TOKENS_PER_S). CTranslate2 4.8's Whisper returns at most half
    the length faster-whisper asks it for, its start tokens and the new ones (asking 6, 10,
    20 and 40 new tokens gave 5, 7, 12 and 22): the bound is asked for twice over, or a
    fast Mandarin turn near 30 s would lose its end. A prompt or prefix takes up to 224 of
    Whisper's 448 tokens and faster-whisper refuses a pass whose prompt and new tokens
    would not fit: a prompted pass asks for 200 at most."""
    seconds = min(samples / 16_000, WINDOW_S)
    bound = int(seconds * MAX_TOKENS_PER_S) + MAX_TOKENS_MARGIN
    return min(2 * bound, 200 if prompted else 440)


def repeats(text: str, min_words: int = 3, min_cjk: int = 4) -> bool:
    """The same run of `min_words` or more words twice in a row: Whisper looping. Words
    are text units: Chinese loops ("我们去吧我们去吧") repeat runs of `min_cjk` characters
    or more (谢谢你，谢谢你 and 哈哈哈哈哈哈 are speech)."""
    words = [w.strip(".,!?;:。，！？；：、").lower() for w in units(text)]
    cjk = sum(bool(w) and is_cjk_letter(w[0]) for w in words) * 2 > len(words)
    for n in range(min_cjk if cjk else min_words, len(words) // 2 + 1):
        for i in range(len(words) - 2 * n + 1):
            if words[i : i + n] == words[i + n : i + 2 * n]:
                return True
    return False


def decode_options(
    samples: int,
    language: str | None,
    beam: int,
    prompted: bool,
    condition: bool | None = None,
    timestamps: bool = False,
) -> dict[str, Any]:
    """faster-whisper's options for a pass over a clip of `samples` (16 kHz): a clip over
    Whisper's window decodes as faster-whisper decodes a long clip (see LONG_FORM_BEAM;
    `condition` None: each window on the text before it unless `language` is in
    UNCONDITIONED), a shorter one with `beam`, within its token bound, and with
    `timestamps` only if asked (see EARLY_END_S)."""
    if samples > WINDOW_S * 16_000:
        return {
            "beam_size": LONG_FORM_BEAM,
            "temperature": TEMPERATURE,
            "condition_on_previous_text": (
                language not in UNCONDITIONED if condition is None else condition
            ),
        }
    return {
        "beam_size": beam,
        "temperature": TEMPERATURE,
        "condition_on_previous_text": False,
        "without_timestamps": not timestamps,
        "max_new_tokens": max_new_tokens(samples, prompted),
    }
