"""Priming: the answer's prompt computed while the user is still speaking.

A voice answer's first token waits for the prefill of what its prompt adds to the last
one: the user's new words and the chat template around them, tens of tokens, which a
1.5B model on two cores computes in a good part of the first token's wait (measured in
docs/benchmarks.md, issue 48). Most of those words are known before the
turn ends: each partial pass over the speech has them. So each partial hands its words
to the session's responses, which have the LLM compute that prompt at once (one request
of one token, see LLMBackend.prime); the prefix cache keeps its KV, and the answer
started at the lull (early_answers.py) prefills only from where its final words differ.
A prime that guessed wrong costs only its compute, taken while the cores mostly wait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.realtime.turns.turn import ResponseStarter, SpeechTurn

# What a partial pass ends with may still change (Whisper ends a cut-off phrase with
# "..." or a full stop): it is left out of the primed words.
_UNSETTLED_END = ".?!,;:…。？！，、 "


@dataclass
class Priming:
    responses: ResponseStarter
    current: Callable[[], SpeechTurn | None]  # the turn being spoken now
    responds: Callable[[], bool]  # whether a turn's end starts its answer by itself
    enabled: bool = True  # the server's R1VOICE_LLM_PRIME

    def heard(self, item_id: str, text: str, language: str | None) -> None:
        """A partial pass heard `text` of the turn `item_id`: prime its answer's prompt,
        when that turn is still the one spoken, counts, and will be answered by itself
        while no answer runs."""
        turn = self.current()
        if not self.enabled or turn is None or turn.item_id != item_id or not turn.confirmed:
            return
        words = text.strip().rstrip(_UNSETTLED_END)
        if words and self.responds() and not self.responses.responding:
            self.responses.prime(words, language)
