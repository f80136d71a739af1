"""`bench decode`'s arithmetic and its guard: decode rates per kind of chat by the wall
clock and by CPU time, engine / peer ratios paired by round, the exactness verdict, and
the engine's real tokens through its peer class (SmolLM2, no llama.cpp)."""

from __future__ import annotations

import argparse

import pytest

from bench.engine import decode
from bench.engine.voice_chats import CHATS, KINDS, VoiceChat

READ = VoiceChat("read", "reads_back", (("user", "x"),))
OPEN = VoiceChat("open", "open", (("user", "y"),))


def _chat(n_tokens: int, decode_s: float, cpu_s: float) -> dict:
    return {
        "tokens": list(range(n_tokens)),
        "prefill_s": 0.1,
        "decode_s": decode_s,
        "decode_cpu_s": cpu_s,
        "steps": n_tokens - 1,
    }


def test_a_kinds_rate_is_its_tokens_after_the_first_over_its_decode_seconds() -> None:
    rnd = [_chat(11, 1.0, 2.0), _chat(21, 4.0, 5.0)]
    assert decode._kind_rate(rnd, [READ, OPEN], "reads_back") == 10.0
    assert decode._kind_rate(rnd, [READ, OPEN], "open") == 5.0
    assert decode._kind_rate(rnd, [READ, OPEN], "all") == 30 / 5.0
    assert decode._kind_rate(rnd, [READ, OPEN], "open", "cpu") == 4.0


def test_ratios_pair_the_sides_round_by_round() -> None:
    chats = [READ, OPEN]
    runs = {
        "engine off": [[_chat(11, 1.0, 1.0), _chat(11, 1.0, 1.0)]] * 2,
        "engine ngram": [[_chat(11, 0.5, 0.5), _chat(11, 1.0, 1.0)]] * 2,
        "llama.cpp": [
            [_chat(11, 1.0, 1.0), _chat(11, 2.0, 2.0)],
            [_chat(11, 2.0, 2.0), _chat(11, 2.0, 2.0)],
        ],
    }
    sides = {name: decode._summary(r, chats) for name, r in runs.items()}
    assert sides["llama.cpp"]["reads_back"]["decode_tok_s_best"] == 10.0
    assert sides["llama.cpp"]["reads_back"]["decode_tok_s_rounds"] == [10.0, 5.0]
    ratios = decode._ratios(sides, runs, chats)
    read = ratios["engine ngram / llama.cpp, reads_back, wall"]
    assert read == {"best": 2.0, "paired_median": 3.0}  # 20/10 best; rounds 2x and 4x
    assert ratios["engine off / llama.cpp, open, cpu"] == {"best": 2.0, "paired_median": 2.0}
    assert "engine off / engine off, all, wall" not in ratios
    table = decode.format_table({"sides": sides, "ratios": ratios})
    assert "engine ngram / llama.cpp, reads_back, wall: best 2.0, paired median 3.0" in table


def test_the_bytes_a_pass_reads_give_each_plain_sides_draw_and_the_tokens_for_1_5x() -> None:
    chats = [READ, OPEN]
    runs = {
        "engine off": [[_chat(11, 1.0, 1.0), _chat(11, 1.0, 1.0)]],  # 10 tok/s
        "engine ngram": [[_chat(11, 0.5, 0.5), _chat(11, 0.5, 0.5)]],  # 20 tok/s
        "llama.cpp": [[_chat(11, 0.8, 0.8), _chat(11, 0.8, 0.8)]],  # 12.5 tok/s
    }
    sides = {name: decode._summary(r, chats) for name, r in runs.items()}
    memory = decode._memory(sides, [30.0], {"engine": 2_000_000_000, "llama.cpp": 1_500_000_000})
    # a pass a token: 10 x 2 GB and 12.5 x 1.5 GB; speculation's passes are not its tokens
    assert memory["drawn_gb_s"] == {"engine off": 20.0, "llama.cpp": 18.8}
    # 1.5 x 12.5 = 18.75 tok/s from passes at the engine's 10 a second
    assert memory["for_1_5x_llama_cpp"] == {"tok_s": 18.8, "tokens_per_engine_pass": 1.88}
    table = decode.format_table({"sides": sides, "ratios": {}, "memory": memory})
    assert "bytes a pass: engine 2.000 GB, llama.cpp 1.500 GB" in table
    assert "1.5x llama.cpp = 18.8 tok/s: 1.88 tokens a pass" in table
    alone = decode._memory({"engine off": sides["engine off"]}, [30.0], {"engine": 2_000_000_000})
    assert "for_1_5x_llama_cpp" not in alone and alone["drawn_gb_s"] == {"engine off": 20.0}


def test_the_modes_must_start_with_off_the_reference_of_exactness() -> None:
    parser = argparse.ArgumentParser()
    decode.add_arguments(parser)
    args = parser.parse_args(["--modes", "ngram,off", "--skip-llama-cpp"])
    with pytest.raises(SystemExit, match="--modes must start with off"):
        decode.run(args)


def test_every_chat_ends_with_the_users_turn_and_has_a_known_kind() -> None:
    assert {c.kind for c in CHATS} == set(KINDS)
    for chat in CHATS:
        messages = chat.as_messages()
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"


def test_the_engine_side_reports_the_same_tokens_with_and_without_prompt_lookup() -> None:
    """The engine's peer class, in this process, on SmolLM2: a chat that reads back
    drafts from the prompt and the verified tokens are those of decoding without it."""
    from bench.engine.decode_peers import EngineDecodePeer

    outs = {}
    for mode in ("off", "ngram"):
        peer = EngineDecodePeer(2, {"model": "smollm2-135m-instruct", "speculative": mode})
        try:
            prompts = peer.prompt_ids([CHATS[1].as_messages()])
            outs[mode] = peer.run(prompts, 40, peer.eos_ids())
        finally:
            peer.close()
    assert [c["tokens"] for c in outs["ngram"]] == [c["tokens"] for c in outs["off"]]
    assert outs["off"][0]["steps"] == len(outs["off"][0]["tokens"]) - 1
    assert outs["ngram"][0]["steps"] < outs["off"][0]["steps"]  # drafts were accepted
