"""N streams' decode together: the engine's concurrent AsyncLLM streams against llama.cpp's batched sequences (its n_parallel), on voice chats.

The voice chats of bench/engine/voice_chats.py, cycled to ``--streams``, are decoded
greedily at once by each side, each in a process of its own (bench/kit/peer_process.py),
rounds interleaved with the first side rotating: our engine as the server runs it (the
prompts submitted concurrently to AsyncLLM) in each ``--modes`` speculative mode, and
llama.cpp on the same GGUF with one context of N sequences, one ``llama_decode`` per step
holding every unfinished sequence's token (bench/engine/llama_cpp_batch.py).

The decode phase of a round runs from the moment every sequence has its first token to
the last token of all; its rate is the tokens that arrived in it over its seconds, by
the wall clock and by the side's process CPU time. Exactness is checked, not assumed:
each engine mode's tokens must equal the engine's own single-stream tokens, sequence by
sequence and round by round (``same_tokens_as_single``), and llama.cpp's those it
decodes alone (its batching is checked the same way); how far llama.cpp's greedy tokens
agree with the engine's is reported (different kernels: not required).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from typing import Any

LLAMA = "llama.cpp"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bench.engine.decode_peers import add_engine_arguments

    add_engine_arguments(parser)
    parser.add_argument("--streams", type=int, default=None, help="default 8 (quick: 4)")
    parser.add_argument("--max-tokens", type=int, default=None, help="default 96 (quick: 32)")
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (quick: 2)")
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument(
        "--ignore-eos",
        action="store_true",
        help="every stream decodes --max-tokens (the batch stays N wide to the end)",
    )
    parser.add_argument("--skip-llama-cpp", action="store_true")


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Streams, tokens, rounds and modes from the arguments (``--quick``: smaller), or a
    SystemExit naming the one to fix."""
    quick = bool(getattr(args, "quick", False))

    def given(value: int | None, normal: int, small: int) -> int:
        return value if value is not None else (small if quick else normal)

    out: dict[str, Any] = {
        "streams": given(args.streams, 8, 4),
        "max_tokens": given(args.max_tokens, 96, 32),
        "rounds": given(args.rounds, 3, 2),
        "modes": [m.strip() for m in args.modes.split(",") if m.strip()],
    }
    for name in ("streams", "max_tokens", "rounds"):
        if out[name] < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1, got {out[name]}")
    if not out["modes"]:
        raise SystemExit("--modes names no engine mode: give e.g. off,ngram")
    return out


def cycled(items: list[Any] | tuple[Any, ...], n: int) -> list[Any]:
    """``items`` repeated in order until there are ``n`` of them."""
    return [items[i % len(items)] for i in range(n)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    from bench.engine.decode_peers import EngineDecodePeer
    from bench.engine.llama_cpp_batch import LlamaCppBatchPeer
    from bench.engine.peers import llama_cpp_gguf
    from bench.engine.voice_chats import CHATS
    from bench.kit.machine import describe
    from bench.kit.peer_process import PeerProcess

    s = settings(args)
    threads = args.threads or len(os.sched_getaffinity(0))
    chats = cycled(CHATS, s["streams"])
    load_before = os.getloadavg()
    result: dict[str, Any] = {
        "model": args.model,
        "quantization": args.quantization,
        "threads": threads,
        **{k: s[k] for k in ("streams", "max_tokens", "rounds")},
        "ignore_eos": args.ignore_eos,
        "machine": describe(),
        "chats": [c.name for c in chats],
    }
    sides: dict[str, Any] = {}
    singles: dict[str, list[list[int]]] = {}
    with contextlib.ExitStack() as stack:
        for mode in s["modes"]:
            kwargs = dict(
                model=args.model,
                quantization=args.quantization,
                quantization_group_size=args.group_size,
                speculative=mode,
            )
            sides[f"engine {mode}"] = stack.enter_context(
                PeerProcess(EngineDecodePeer, threads, kwargs)
            )
        first = sides[f"engine {s['modes'][0]}"]
        prompts = first.prompt_ids([c.as_messages() for c in chats])
        eos = [] if args.ignore_eos else first.eos_ids()
        path, result[LLAMA] = llama_cpp_gguf(args.model)
        if args.skip_llama_cpp:
            result[LLAMA] = {"available": False, "why": "--skip-llama-cpp"}
        elif path is not None:
            sides[LLAMA] = stack.enter_context(
                PeerProcess(LlamaCppBatchPeer, str(path), threads, s["streams"])
            )
        # The single-stream references, once per distinct prompt (a cycled chat repeats).
        distinct = [list(p) for p in dict.fromkeys(tuple(p) for p in prompts)]
        reference = sides.get("engine off", first)
        each = [r["tokens"] for r in reference.run(distinct, s["max_tokens"], eos)]
        singles["engine"] = [each[distinct.index(p)] for p in prompts]
        if LLAMA in sides:
            each = [r["tokens"] for r in sides[LLAMA].run_each(distinct, s["max_tokens"], eos)]
            singles[LLAMA] = [each[distinct.index(p)] for p in prompts]
        names = list(sides)
        runs: dict[str, list[list[dict[str, Any]]]] = {n: [] for n in names}
        for r in range(s["rounds"]):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                call = "run" if name == LLAMA else "run_together"
                runs[name].append(getattr(sides[name], call)(prompts, s["max_tokens"], eos))
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    result["sides"] = {
        name: summary(rounds, singles[LLAMA if name == LLAMA else "engine"])
        for name, rounds in runs.items()
    }
    if LLAMA in singles:
        result["agreement_with_llama_cpp"] = agreement(singles["engine"], singles[LLAMA])
    result["ratios"] = ratios(result["sides"])
    return result


def decode_phase(seqs: list[dict[str, Any]]) -> dict[str, float]:
    """One round's decode phase over its sequences (each with its tokens' ``clocks``,
    (wall, cpu) pairs, and the round's ``start``): from the last sequence's first token to
    the last token of all, the tokens that arrived after its start, its wall and CPU
    seconds; ``prefill_s``: from the round's start to the phase's."""
    firsts = [s["clocks"][0] for s in seqs if s["clocks"]]
    lasts = [s["clocks"][-1] for s in seqs if s["clocks"]]
    if not firsts:
        return {"tokens": 0, "decode_s": 0.0, "decode_cpu_s": 0.0, "prefill_s": 0.0}
    begin, end = max(firsts), max(lasts)
    tokens = sum(1 for s in seqs for wall, _ in s["clocks"] if wall > begin[0])
    return {
        "tokens": tokens,
        "decode_s": end[0] - begin[0],
        "decode_cpu_s": end[1] - begin[1],
        "prefill_s": begin[0] - seqs[0]["start"][0],
    }


def rates(phase: dict[str, float]) -> tuple[float, float]:
    """(tok/s by the wall clock, tok/s of CPU time) of one decode phase."""
    wall, cpu = phase["decode_s"], phase["decode_cpu_s"]
    return (
        phase["tokens"] / wall if wall > 0 else 0.0,
        phase["tokens"] / cpu if cpu > 0 else 0.0,
    )


def _stats(values: list[float]) -> dict[str, Any]:
    return {
        "best": round(max(values), 2),
        "median": round(statistics.median(values), 2),
        "rounds": [round(v, 2) for v in values],
    }


def summary(rounds: list[list[dict[str, Any]]], single: list[list[int]]) -> dict[str, Any]:
    """A side's rounds: decode tok/s (wall and CPU) best, median and per round, the
    time to every first token, each sequence's token count, and whether every round's
    tokens are the single-stream ones."""
    phases = [decode_phase(rnd) for rnd in rounds]
    walls, cpus = zip(*(rates(p) for p in phases), strict=True)
    return {
        "decode_tok_s": _stats(list(walls)),
        "decode_tok_per_cpu_s": _stats(list(cpus)),
        "prefill_s_best": round(min(p["prefill_s"] for p in phases), 3),
        "tokens_per_sequence": [len(s["tokens"]) for s in rounds[0]],
        "same_tokens_as_single": all([s["tokens"] for s in rnd] == single for rnd in rounds),
    }


def agreement(mine: list[list[int]], theirs: list[list[int]]) -> dict[str, int]:
    """How far two sides' greedy tokens agree, sequence by sequence: the sequences alike
    throughout, and the tokens before each sequence's first difference."""
    prefix = 0
    for a, b in zip(mine, theirs, strict=True):
        same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        prefix += min(len(a), len(b)) if same is None else same
    return {
        "sequences": len(mine),
        "identical_sequences": sum(a == b for a, b in zip(mine, theirs, strict=True)),
        "tokens_before_first_difference": prefix,
        "tokens": sum(len(b) for b in theirs),
    }


def ratios(sides: dict[str, Any]) -> dict[str, Any]:
    """Each engine side over llama.cpp, wall and CPU: best over best, and the median of
    the rounds' own ratios (sides paired by round)."""
    out: dict[str, Any] = {}
    if LLAMA not in sides:
        return out
    for mine in (n for n in sides if n != LLAMA):
        for label in ("decode_tok_s", "decode_tok_per_cpu_s"):
            a, b = sides[mine][label], sides[LLAMA][label]
            paired = [x / y for x, y in zip(a["rounds"], b["rounds"], strict=True) if y > 0]
            out[f"{mine} / {LLAMA}, {label}"] = {
                "best": round(a["best"] / b["best"], 2) if b["best"] else None,
                "paired_median": round(statistics.median(paired), 2) if paired else None,
            }
    return out


def format_table(result: dict[str, Any]) -> str:
    eos = ", end-of-sequence ignored" if result.get("ignore_eos") else ""
    lines = [f"{result['streams']} streams{eos} | decode tok/s best (median) | per CPU-s | exact"]
    for name, side in result["sides"].items():
        wall, cpu = side["decode_tok_s"], side["decode_tok_per_cpu_s"]
        lines.append(
            f"{name} | {wall['best']} ({wall['median']}) | {cpu['best']} ({cpu['median']}) "
            f"| {side['same_tokens_as_single']}"
        )
    for name, ratio in result["ratios"].items():
        lines.append(f"{name}: best {ratio['best']}, paired median {ratio['paired_median']}")
    return "\n".join(lines)
