"""The output processor: stop strings found in the text, and one request's detokenizing
failing fails that request alone."""

from __future__ import annotations

from pathlib import Path

from engine import LLM, SamplingParams
from engine.output_processor import OutputProcessor
from engine.sequence import Sequence


class CharTokenizer:
    """One character per token id."""

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(map(chr, ids))


def test_stop_strings_are_cut_and_reported_not_acted_on() -> None:
    """The processor reports the ends it reads in the text; the scheduler ends them."""
    op = OutputProcessor(CharTokenizer())
    a = Sequence([ord(">")], SamplingParams(stop=["END"]))
    b = Sequence([ord(">")], SamplingParams())
    op.add(a)
    op.add(b)
    ends = []
    for char in "hi END":
        a.append_token(ord(char))
        b.append_token(ord(char))
        ends += op.process([a, b])
        assert op.stream_text(a) == a.output_text[: max(0, len(a.output_text) - 2)]
    assert ends == [(a, "stop")] and a.output_text == "hi " and not a.is_finished
    assert b.output_text == "hi END"


class Exploding:
    """A detokenizer that breaks on the request's second token."""

    def __init__(self) -> None:
        self.calls = 0

    def add(self, token_id: int) -> str:
        self.calls += 1
        if self.calls >= 2:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "simulated")
        return "x"


def test_a_detokenizer_failure_fails_only_its_request(smollm2_dir: Path) -> None:
    """Bug: any exception in a step's post-processing failed every request of the step."""
    llm = LLM("smollm2-135m-instruct", max_num_seqs=4)
    p = SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True)
    bad = llm.add_request("Hello", p, "bad")
    good = llm.add_request("Hello there", p, "good")
    llm.output_processor.detokenizers[bad.seq_id] = Exploding()  # type: ignore[assignment]
    while llm.has_unfinished():
        llm.step()
    assert bad.finish_reason == "error"
    assert good.finish_reason == "length" and len(good.output_text) > 0
    stats = llm.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total  # the failed request freed its blocks
