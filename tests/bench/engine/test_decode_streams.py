"""`bench decode-streams`: its settings, the decode phase of a round of streams decoded
together, the summaries, agreement and ratios; llama.cpp's batched sequences (real, on the
bundled 0.5B GGUF) give each sequence the tokens llama.cpp gives it alone, and the
engine's concurrent streams the tokens of its single streams (SmolLM2)."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from bench.engine import decode_streams as ds
from bench.engine.voice_chats import CHATS


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    ds.add_arguments(parser)
    parser.add_argument("--quick", action="store_true")
    return parser.parse_args(list(argv))


def _seq(tokens: list[int], walls: list[float], start: float = 0.0) -> dict:
    """A sequence whose CPU clock runs at twice its wall clock."""
    return {"tokens": tokens, "clocks": [(w, 2 * w) for w in walls], "start": (start, 0.0)}


def test_quick_is_smaller_and_a_number_under_one_is_refused_by_name() -> None:
    assert ds.settings(_args()) == {
        "streams": 8,
        "max_tokens": 96,
        "rounds": 3,
        "modes": ["off", "ngram"],
    }
    quick = ds.settings(_args("--quick", "--modes", " ngram ,"))
    assert quick == {"streams": 4, "max_tokens": 32, "rounds": 2, "modes": ["ngram"]}
    with pytest.raises(SystemExit, match="--max-tokens must be at least 1, got -2"):
        ds.settings(_args("--max-tokens", "-2"))
    with pytest.raises(SystemExit, match="--streams must be at least 1, got 0"):
        ds.settings(_args("--streams", "0"))
    with pytest.raises(SystemExit, match="--modes names no engine mode"):
        ds.settings(_args("--modes", ","))


def test_the_chats_are_cycled_to_the_number_of_streams() -> None:
    assert ds.cycled(list("abc"), 7) == list("abcabca")
    assert [c.name for c in ds.cycled(CHATS, 8)] == [c.name for c in CHATS] + [CHATS[0].name]


def test_the_decode_phase_starts_when_every_sequence_has_its_first_token() -> None:
    # One sequence decodes while the other is still prefilled: its tokens before the
    # second's first (at t=3) are not the decode phase's.
    seqs = [_seq([1, 2, 3, 4, 5], [1.0, 2.0, 3.5, 4.0, 6.0]), _seq([7, 8, 9], [3.0, 4.0, 5.0])]
    phase = ds.decode_phase(seqs)
    assert phase == {"tokens": 5, "decode_s": 3.0, "decode_cpu_s": 6.0, "prefill_s": 3.0}
    assert ds.rates(phase) == (5 / 3.0, 5 / 6.0)
    assert ds.decode_phase([_seq([], [])])["tokens"] == 0
    assert ds.rates(ds.decode_phase([_seq([1], [1.0])])) == (0.0, 0.0)


def test_a_sides_summary_says_whether_every_round_kept_the_single_stream_tokens() -> None:
    fast = [_seq([1, 2, 3], [1.0, 2.0, 3.0]), _seq([4, 5, 6], [1.0, 2.0, 3.0])]
    slow = [_seq([1, 2, 3], [1.0, 3.0, 5.0]), _seq([4, 5, 9], [1.0, 3.0, 5.0])]
    same = ds.summary([fast, fast[:1] + fast[1:]], [[1, 2, 3], [4, 5, 6]])
    assert same["decode_tok_s"] == {"best": 2.0, "median": 2.0, "rounds": [2.0, 2.0]}
    assert same["decode_tok_per_cpu_s"]["best"] == 1.0
    assert same["tokens_per_sequence"] == [3, 3] and same["same_tokens_as_single"] is True
    differs = ds.summary([fast, slow], [[1, 2, 3], [4, 5, 6]])
    assert differs["same_tokens_as_single"] is False
    assert differs["decode_tok_s"] == {"best": 2.0, "median": 1.5, "rounds": [2.0, 1.0]}


def test_agreement_counts_the_tokens_before_each_sequences_first_difference() -> None:
    mine = [[1, 2, 3, 4], [5, 6], [7, 8, 9]]
    theirs = [[1, 2, 0, 4], [5, 6], [7, 8]]
    assert ds.agreement(mine, theirs) == {
        "sequences": 3,
        "identical_sequences": 1,
        "tokens_before_first_difference": 2 + 2 + 2,
        "tokens": 8,
    }


def test_ratios_pair_each_engine_side_with_llama_cpp_round_by_round() -> None:
    def side(walls: list[float], cpus: list[float]) -> dict:
        return {
            "decode_tok_s": {"best": max(walls), "rounds": walls},
            "decode_tok_per_cpu_s": {"best": max(cpus), "rounds": cpus},
            "same_tokens_as_single": True,
        }

    sides = {"engine off": side([40.0, 30.0], [20.0, 20.0]), ds.LLAMA: side([10.0, 20.0], [5, 5])}
    ratios = ds.ratios(sides)
    assert ratios == {
        "engine off / llama.cpp, decode_tok_s": {"best": 2.0, "paired_median": 2.75},
        "engine off / llama.cpp, decode_tok_per_cpu_s": {"best": 4.0, "paired_median": 4.0},
    }
    assert ds.ratios({"engine off": sides["engine off"]}) == {}
    for s in sides.values():
        for key in ("decode_tok_s", "decode_tok_per_cpu_s"):
            s[key]["median"] = s[key]["best"]
    table = ds.format_table({"streams": 8, "sides": sides, "ratios": ratios, "ignore_eos": True})
    assert table.startswith("8 streams, end-of-sequence ignored | decode tok/s")
    assert "engine off | 40.0 (40.0) | 20.0 (20.0) | True" in table.splitlines()
    assert "engine off / llama.cpp, decode_tok_s: best 2.0, paired median 2.75" in table


needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python is not installed (`make bench-peers`)",
)


def _chatml(messages: list[dict[str, str]]) -> bytes:
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return (text + "<|im_start|>assistant\n").encode()


@needs_llama_cpp
def test_llama_cpps_batched_sequences_get_the_tokens_each_gets_alone() -> None:
    """Three voice chats decoded together by llama.cpp on the 0.5B GGUF, in two orders:
    each sequence's greedy tokens are those llama-cpp-python's ``Llama`` generates for it
    alone, and those the peer decodes for it alone. (English chats: the Chinese one meets
    a near tie whose winner in llama.cpp depends on the sequence's slot in the batch.)"""
    from llama_cpp import Llama

    from bench.engine.llama_cpp_batch import LlamaCppBatchPeer
    from engine import bundled_gguf_path

    path = str(bundled_gguf_path("qwen2.5-coder-0.5b-instruct"))
    max_tokens = 24
    alone = Llama(path, n_threads=2, n_ctx=1024, verbose=False)
    try:
        prompts = [
            alone.tokenize(_chatml(c.as_messages()), add_bos=False, special=True)
            for c in (CHATS[0], CHATS[4], CHATS[5])
        ]
        eos = [alone.token_eos()]
        expected = []
        for prompt in prompts:
            tokens: list[int] = []
            for token in alone.generate(prompt, temp=0.0, reset=True):
                tokens.append(token)
                if token in eos or len(tokens) == max_tokens:
                    break
            expected.append(tokens)
    finally:
        alone.close()
    peer = LlamaCppBatchPeer(path, 2, streams=3, n_ctx_per_seq=512)
    try:
        together = peer.run(prompts, max_tokens, eos)
        backwards = peer.run(prompts[::-1], max_tokens, eos)
        each = peer.run_each(prompts, max_tokens, eos)
        with pytest.raises(ValueError, match="4 prompts for a context of 3 sequences"):
            peer.run(prompts + prompts[:1], max_tokens, eos)
        with pytest.raises(ValueError, match="exceeds the 512 positions of a sequence"):
            peer.run(prompts, 500, eos)
        with pytest.raises(ValueError, match="an empty prompt"):
            peer.run([prompts[0], []], max_tokens, eos)
    finally:
        peer.close()
    assert [s["tokens"] for s in together] == expected
    assert [s["tokens"] for s in backwards] == expected[::-1]
    assert [s["tokens"] for s in each] == expected
    for seq in together:
        assert len(seq["clocks"]) == len(seq["tokens"])
        walls = [w for w, _ in seq["clocks"]]
        assert walls == sorted(walls) and walls[0] > seq["start"][0]


def test_the_engines_concurrent_streams_get_the_tokens_of_its_single_streams() -> None:
    """The engine's peer class, in this process, on SmolLM2: three chats submitted at once
    give each chat the tokens it gets alone, with a clock per token."""
    from bench.engine.decode_peers import EngineDecodePeer

    peer = EngineDecodePeer(2, {"model": "smollm2-135m-instruct", "speculative": "off"})
    try:
        prompts = peer.prompt_ids([c.as_messages() for c in (CHATS[1], CHATS[4], CHATS[5])])
        alone = peer.run(prompts, 32, peer.eos_ids())
        together = peer.run_together(prompts, 32, peer.eos_ids())
        to_the_end = peer.run_together(prompts, 12, [])  # no end-of-sequence tokens
    finally:
        peer.close()
    assert [s["tokens"] for s in together] == [s["tokens"] for s in alone]
    assert all(len(s["clocks"]) == len(s["tokens"]) for s in together)
    assert [len(s["tokens"]) for s in to_the_end] == [12, 12, 12]
    assert [s["tokens"] for s in to_the_end] == [s["tokens"][:12] for s in alone]
    phase = ds.decode_phase(together)
    assert phase["tokens"] > 0 and phase["decode_s"] > 0
