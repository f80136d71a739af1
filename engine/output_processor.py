"""OutputProcessor: new tokens -> text, stop strings, and the text safe to stream."""

from __future__ import annotations

import logging
from typing import Any

from engine.detokenizer import IncrementalDetokenizer
from engine.sequence import Sequence

log = logging.getLogger(__name__)


class OutputProcessor:
    """Keeps each live sequence's detokenizer and finds the stop strings in its text.

    The stop string is cut from the text (it is not part of the answer). While a
    sequence runs, the last ``len(longest stop) - 1`` characters are held back from
    streams, since they may be the start of a stop string.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.detokenizers: dict[int, IncrementalDetokenizer] = {}

    def add(self, seq: Sequence) -> None:
        if self.tokenizer is not None:
            self.detokenizers[seq.seq_id] = IncrementalDetokenizer(
                self.tokenizer, seq.prompt_token_ids, seq.params.skip_special_tokens
            )

    def release(self, seq: Sequence) -> None:
        self.detokenizers.pop(seq.seq_id, None)

    def process(self, seqs: list[Sequence]) -> list[tuple[Sequence, str]]:
        """Detokenize each sequence's newest token. Returns the sequences their text
        ends, each with its reason for Scheduler.finish: "stop" (a stop string) or
        "error" (detokenizing failed: this request fails alone, the batch goes on)."""
        ends: list[tuple[Sequence, str]] = []
        for seq in seqs:
            detok = self.detokenizers.get(seq.seq_id)
            if detok is None:
                continue
            try:
                new = "".join(map(detok.add, seq.completion_token_ids[detok.num_added :]))
                if new:
                    start = max(0, len(seq.output_text) - self.max_stop_len(seq) + 1)
                    seq.output_text += new
                    if self._cut_stop_string(seq, start):
                        ends.append((seq, "stop"))
            except Exception:
                log.exception("detokenizing request %s failed", seq.request_id)
                ends.append((seq, "error"))
        return ends

    @staticmethod
    def max_stop_len(seq: Sequence) -> int:
        return max((len(s) for s in seq.params.stop or []), default=0)

    @staticmethod
    def _cut_stop_string(seq: Sequence, start: int) -> bool:
        """Cut the text at the first stop string found from ``start``; True if one was."""
        for stop in seq.params.stop or []:
            idx = seq.output_text.find(stop, start)
            if idx != -1:
                seq.output_text = seq.output_text[:idx]
                return True
        return False

    def stream_text(self, seq: Sequence) -> str:
        """The text that is safe to show now."""
        if seq.is_finished:
            return seq.output_text
        return seq.output_text[: len(seq.output_text) - max(0, self.max_stop_len(seq) - 1)]
