"""One stream's decode: the engine with and without speculation against llama.cpp with and without prompt lookup, on voice chats.

Each side is a process of its own (bench/kit/peer_process.py), run in turn round by
round, the first side rotating: our engine in each ``--modes`` speculative mode, and
llama.cpp on the same GGUF, plain and with its own prompt-lookup draft (llama-cpp-
python's ``LlamaPromptLookupDecoding``). Every side decodes the same chat-templated
token ids greedily up to its end-of-sequence token or ``--max-tokens``; decode tok/s is
the tokens after the first over the seconds from the first to the last (prefill and
its first token excluded, reported apart). Chats are bench/engine/voice_chats.py's,
reported per kind (``reads_back``: the answer repeats the conversation; ``open``).

Exactness is checked, not assumed: every engine mode's tokens must equal the engine
without speculation's, chat by chat, round by round (``same_tokens_as_off``).

``memory``: the weight bytes one pass of each side reads, the GB/s each plain side drew,
and the tokens a pass the engine would need to decode 1.5x llama.cpp (see ``_memory``).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bench.engine.decode_peers import add_engine_arguments

    add_engine_arguments(parser)
    parser.add_argument("--draft-model", default=None, help="draft/auto modes' draft model")
    parser.add_argument("--num-speculative-tokens", type=int, default=None)
    parser.add_argument(
        "--lookup-tokens", type=int, default=10, help="llama.cpp's prompt-lookup draft length"
    )
    parser.add_argument("--max-tokens", type=int, default=None, help="default 96 (quick: 48)")
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (quick: 2)")
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument("--skip-llama-cpp", action="store_true")
    parser.add_argument(
        "--skip-llama-lookup",
        action="store_true",
        help="no llama.cpp+lookup side (its Python draft loop is slow to run)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    from bench.engine.decode_peers import EngineDecodePeer, LlamaCppDecodePeer
    from bench.engine.peers import llama_cpp_gguf, read_bandwidth_gbs
    from bench.engine.voice_chats import CHATS
    from bench.kit.machine import describe
    from bench.kit.peer_process import PeerProcess
    from engine import gguf_decode_weight_bytes

    quick = bool(getattr(args, "quick", False))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or modes[0] != "off":
        raise SystemExit("--modes must start with off: the other modes are checked against it")
    max_tokens = args.max_tokens or (48 if quick else 96)
    rounds = args.rounds or (2 if quick else 3)
    threads = args.threads or len(os.sched_getaffinity(0))
    chats = [CHATS[0], CHATS[4]] if quick else list(CHATS)
    load_before = os.getloadavg()
    result: dict[str, Any] = {
        "model": args.model,
        "quantization": args.quantization,
        "threads": threads,
        "max_tokens": max_tokens,
        "rounds": rounds,
        "machine": describe(),
        "chats": [{"name": c.name, "kind": c.kind} for c in chats],
    }
    sides: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        for mode in modes:
            kwargs: dict[str, Any] = dict(
                model=args.model,
                quantization=args.quantization,
                quantization_group_size=args.group_size,
                speculative=mode,
                draft_model=args.draft_model if mode in ("draft", "auto") else None,
            )
            if args.num_speculative_tokens:
                kwargs["num_speculative_tokens"] = args.num_speculative_tokens
            sides[f"engine {mode}"] = stack.enter_context(
                PeerProcess(EngineDecodePeer, threads, kwargs)
            )
        off = sides["engine off"]
        prompts = off.prompt_ids([c.as_messages() for c in chats])
        eos = off.eos_ids()
        path, result["llama.cpp"] = llama_cpp_gguf(args.model)
        bytes_per_pass = {"engine": off.decode_bytes()}
        if path is not None:
            bytes_per_pass["llama.cpp"] = gguf_decode_weight_bytes(path)
        bandwidths = [read_bandwidth_gbs(threads) for _ in range(3)]
        if args.skip_llama_cpp:
            result["llama.cpp"] = {"available": False, "why": "--skip-llama-cpp"}
        elif path is not None:
            result["llama.cpp"]["lookup"] = args.lookup_tokens
            lookups = {"llama.cpp": 0}
            if not args.skip_llama_lookup:
                lookups["llama.cpp+lookup"] = args.lookup_tokens
            for name, lookup in lookups.items():
                sides[name] = stack.enter_context(
                    PeerProcess(LlamaCppDecodePeer, str(path), threads, lookup)
                )
        names = list(sides)
        runs: dict[str, list[list[dict[str, Any]]]] = {n: [] for n in names}
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                runs[name].append(sides[name].run(prompts, max_tokens, eos))
        bandwidths += [read_bandwidth_gbs(threads) for _ in range(3)]
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    result["sides"] = {name: _summary(side_runs, chats) for name, side_runs in runs.items()}
    off_tokens = [[c["tokens"] for c in rnd] for rnd in runs["engine off"]]
    for name in names:
        if name.startswith("engine ") and name != "engine off":
            mine = [[c["tokens"] for c in rnd] for rnd in runs[name]]
            result["sides"][name]["same_tokens_as_off"] = mine == off_tokens
    result["ratios"] = _ratios(result["sides"], runs, chats)
    result["memory"] = _memory(result["sides"], bandwidths, bytes_per_pass)
    return result


def _memory(sides: dict[str, Any], bandwidths: list[float], bytes_per_pass: dict[str, int]) -> dict:
    """What one stream's decode reads: the weight bytes of a pass (one forward of the
    target model, however many tokens it verifies), the GB/s each plain side drew at
    its best round (tok/s x bytes: a pass a token), and the tokens each of the engine's
    passes must yield, at its own plain pass rate, to decode 1.5x llama.cpp's best.
    ``probe_gb_s``: a torch sum over 512 MiB before and after the rounds, the host's
    bandwidth at those moments (it moves from minute to minute with its neighbours, so
    it bounds nothing the rounds did)."""
    out: dict[str, Any] = {"bytes_per_pass": bytes_per_pass, "probe_gb_s": bandwidths}
    drawn = {"engine off": "engine", "llama.cpp": "llama.cpp"}
    out["drawn_gb_s"] = {
        name: round(sides[name]["all"]["decode_tok_s_best"] * bytes_per_pass[who] / 1e9, 1)
        for name, who in drawn.items()
        if name in sides and who in bytes_per_pass
    }
    if "llama.cpp" in sides:
        needed = 1.5 * sides["llama.cpp"]["all"]["decode_tok_s_best"]
        passes = sides["engine off"]["all"]["decode_tok_s_best"]
        out["for_1_5x_llama_cpp"] = {
            "tok_s": round(needed, 1),
            "tokens_per_engine_pass": round(needed / passes, 2) if passes else None,
        }
    return out


CLOCKS = {"wall": "decode_s", "cpu": "decode_cpu_s"}


def _kind_rate(
    rnd: list[dict[str, Any]], chats: list[Any], kind: str, clock: str = "wall"
) -> float:
    """Decode tokens per second of one round over the chats of one kind ("all": every
    chat), by the wall clock or by the side's process CPU time ("cpu": what other jobs on
    the machine disturb least, at one thread a side)."""
    picked = [c for c, chat in zip(rnd, chats, strict=True) if kind in ("all", chat.kind)]
    tokens = sum(max(0, len(c["tokens"]) - 1) for c in picked)
    seconds = sum(c[CLOCKS[clock]] for c in picked)
    return tokens / seconds if seconds > 0 else 0.0


def _summary(side_runs: list[list[dict[str, Any]]], chats: list[Any]) -> dict[str, Any]:
    kinds = [*sorted({c.kind for c in chats}), "all"]
    out: dict[str, Any] = {}
    for kind in kinds:
        out[kind] = {}
        for clock, label in (("wall", "decode_tok_s"), ("cpu", "decode_tok_per_cpu_s")):
            rates = [_kind_rate(rnd, chats, kind, clock) for rnd in side_runs]
            out[kind] |= {
                f"{label}_best": round(max(rates), 2),
                f"{label}_median": round(statistics.median(rates), 2),
                f"{label}_rounds": [round(x, 2) for x in rates],
            }
    out["per_chat"] = [
        {
            "name": chat.name,
            "tokens": len(side_runs[0][i]["tokens"]),
            "steps": side_runs[0][i]["steps"],
            "decode_tok_s_best": round(
                max(_kind_rate([rnd[i]], [chat], "all") for rnd in side_runs), 2
            ),
            "prefill_s_best": round(min(rnd[i]["prefill_s"] for rnd in side_runs), 3),
        }
        for i, chat in enumerate(chats)
    ]
    return out


def _ratios(
    sides: dict[str, Any], runs: dict[str, list[list[dict[str, Any]]]], chats: list[Any]
) -> dict[str, Any]:
    """Each engine side over each llama.cpp side, per kind: best over best, and the
    median of the rounds' own ratios (sides paired by round)."""
    out: dict[str, Any] = {}
    engines = [n for n in runs if n.startswith("engine ")]
    peers = [n for n in runs if n.startswith("llama.cpp")] or ["engine off"]
    for mine in engines:
        for theirs in peers:
            if mine == theirs:
                continue
            for kind in [*sorted({c.kind for c in chats}), "all"]:
                for clock, label in (("wall", "decode_tok_s"), ("cpu", "decode_tok_per_cpu_s")):
                    best = sides[theirs][kind][f"{label}_best"]
                    paired = [
                        _kind_rate(a, chats, kind, clock) / _kind_rate(b, chats, kind, clock)
                        for a, b in zip(runs[mine], runs[theirs], strict=True)
                        if _kind_rate(b, chats, kind, clock) > 0
                    ]
                    mine_best = sides[mine][kind][f"{label}_best"]
                    out[f"{mine} / {theirs}, {kind}, {clock}"] = {
                        "best": round(mine_best / best, 2) if best else None,
                        "paired_median": round(statistics.median(paired), 2) if paired else None,
                    }
    return out


def format_table(result: dict[str, Any]) -> str:
    first = next(iter(result["sides"].values()))
    kinds = [k for k in ("reads_back", "open", "all") if k in first]
    lines = []
    for label in ("decode_tok_s", "decode_tok_per_cpu_s"):
        lines.append(f"{label}, best (median) | " + " | ".join(kinds))
        for name, side in result["sides"].items():
            cells = [f"{side[k][label + '_best']} ({side[k][label + '_median']})" for k in kinds]
            same = side.get("same_tokens_as_off")
            exact = "" if same is None else f" [exact: {same}]"
            lines.append(f"{name}{exact} | " + " | ".join(cells))
    for name, ratio in result["ratios"].items():
        lines.append(f"{name}: best {ratio['best']}, paired median {ratio['paired_median']}")
    memory = result.get("memory")
    if memory:
        lines.append(
            "bytes a pass: "
            + ", ".join(f"{who} {b / 1e9:.3f} GB" for who, b in memory["bytes_per_pass"].items())
            + "; drawn at best: "
            + ", ".join(f"{name} {gbs} GB/s" for name, gbs in memory["drawn_gb_s"].items())
        )
        if "for_1_5x_llama_cpp" in memory:
            need = memory["for_1_5x_llama_cpp"]
            lines.append(
                f"1.5x llama.cpp = {need['tok_s']} tok/s: "
                f"{need['tokens_per_engine_pass']} tokens a pass at the engine's pass rate"
            )
    return "\n".join(lines)
