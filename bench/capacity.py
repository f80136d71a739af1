"""How many conversations one box holds: N voice sessions at once, N swept until it breaks.

One real server (`python -m app.cli serve`, as `bench voice` starts it) and N Realtime
clients that behave like people on a microphone: 20 ms chunks at real-time pace, silence
between words, the recorded and synthesized questions of `bench voice`, a think time
after each answer (uniform, around `--think` seconds), and sessions that start as Poisson
arrivals. At each N, one more connection interrupts a long answer while the N talk (the
barge-in stop time under that load). Per N: voice-to-voice P50/P95 (the last speech
sample sent -> the first answer audio received), failed turns, the barge-in stop time,
and the share of the server's CPU time each stage's threads took (/proc, by thread
name). **Capacity is the largest N with P95 <= the target (1.5 s) and no failed turn**;
the sweep stops at the first N past it.

`--peer pipecat` sweeps the stack a user would build instead (bench/pipecat_peer.py: a
Pipecat pipeline on the same models) level by level after r1voice, on the same scripts,
starts and think times, and reports both capacities and their ratio.

The clients run in this process, on the same cores as the server, as a user's browser
would not: their cost (JSON and base64 of 50 chunks a second per session) is reported as
this process's CPU time. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from bench.voice.common import log

P95_TARGET_MS = 1500.0
DEFAULT_LEVELS = "1,2,4,6,8,12,16"

# The server's threads by the stage they serve: OS thread names, given by app/executor.py
# and the engine (engine/thread_name.py); a thread a library starts inherits the name of
# the thread that started it (a model's load thread, "asr-load", starts CTranslate2's).
STAGES = {
    "asr": ("asr",),
    "tts": ("tts",),
    "vad": ("vad",),
    "turn model": ("turn",),
    "llm": ("r1voice-engine", "llm"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-backend", choices=["embedded", "transformers"], default=None,
        help="passed to `serve`",
    )  # fmt: skip
    parser.add_argument("--llm-model", default=None, help="passed to `serve`")
    parser.add_argument(
        "--turn-detection", choices=["server_vad", "semantic_vad"], default=None,
        help="the sessions' turn detection (default: the server's default)",
    )  # fmt: skip
    parser.add_argument(
        "--eagerness", choices=["low", "medium", "high", "auto"], default=None,
        help="semantic_vad's eagerness (default: the server's default, auto)",
    )  # fmt: skip
    parser.add_argument(
        "--sessions", default=None,
        help=f"the levels N to sweep, comma separated (default {DEFAULT_LEVELS}; quick 1,2)",
    )  # fmt: skip
    parser.add_argument(
        "--turns", type=int, default=None, help="voice turns per session (default 4, quick 2)"
    )
    parser.add_argument(
        "--think", type=float, default=2.0,
        help="mean think time after an answer, s (uniform over 0.5x-1.5x; default 2)",
    )  # fmt: skip
    parser.add_argument(
        "--arrival-rate", type=float, default=1.0,
        help="Poisson arrival rate of session starts, per second (default 1)",
    )  # fmt: skip
    parser.add_argument("--p95-target-ms", type=float, default=P95_TARGET_MS)
    parser.add_argument(
        "--keep-going", action="store_true", help="run every level, even past the capacity"
    )
    parser.add_argument(
        "--peer", choices=["pipecat"], default=None,
        help="also sweep the Pipecat pipeline on the same models, level by level after "
        "r1voice (needs `make bench-pipecat`)",
    )  # fmt: skip
    parser.add_argument("--plot", default=None, help="write a PNG of P50/P95 against N here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="seconds per turn")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    from app.settings import Settings
    from bench.machine import describe
    from bench.voice.server import Server
    from bench.voice.workload import HUMAN_CLIPS, prepare_clips

    quick = bool(getattr(args, "quick", False))
    levels = parse_levels(args.sessions or ("1,2" if quick else DEFAULT_LEVELS))
    turns = args.turns or (2 if quick else 4)
    human = ["jfk"] if quick else list(HUMAN_CLIPS)
    args.language = None  # what Server reads (a Mandarin capacity run is not offered yet)
    log(f"preparing audio ({len(human)} human clips)")
    clips = prepare_clips(human)
    server = Server(args)
    result: dict[str, Any] = {
        "benchmark": "capacity",
        "quick": quick,
        "machine": describe(),
        "settings": {
            "levels": levels,
            "turns_per_session": turns,
            "think_s": args.think,
            "arrival_rate_per_s": args.arrival_rate,
            "p95_target_ms": args.p95_target_ms,
            "seed": args.seed,
            "llm_model": server.llm_model,
            "turn_detection": args.turn_detection,
            "eagerness": args.eagerness,
        },
    }
    peer = _peer(args, server.llm_model) if args.peer else None
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        log(f"server ready after {result['startup_to_ready_s']} s on port {server.port}")
        systems = {
            "r1voice": System(
                f"ws://127.0.0.1:{server.port}/v1/realtime?r1voice_events=1", [server.proc.pid]
            )
        }
        if peer is not None:
            result["peer_startup_s"] = round(peer.start(args.ready_timeout), 3)
            llm_pid, bot_pid = peer.pids
            stages = {llm_pid: "llm (llama.cpp)", bot_pid: "pipeline (vad, turn, asr, tts)"}
            systems["pipecat"] = System(peer.url, peer.pids, False, stages)
        merge_window_ms = Settings.from_env().turn_merge_window_ms  # the server inherits our env
        sweeps = asyncio.run(_sweep(systems, clips, human, levels, turns, args, merge_window_ms))
        result["levels"] = sweeps["r1voice"]
        result["capacity"] = capacity(sweeps["r1voice"])
        if peer is not None:
            result["peer"] = {
                "system": "pipecat",
                "pipeline": PIPECAT_PIPELINE,
                "levels": sweeps["pipecat"],
                "capacity": capacity(sweeps["pipecat"]),
            }
            result["comparison"] = compare(result["levels"], sweeps["pipecat"])
    finally:
        result["server"] = server.stop()
        if peer is not None:
            result.setdefault("peer", {})["processes"] = peer.stop()
    if args.plot:
        shown = {"r1voice": result.get("levels", [])}
        if peer is not None:
            shown["pipecat"] = result["peer"].get("levels", [])
        result["plot"] = plot(shown, args.plot, args.p95_target_ms)
    return result


PIPECAT_PIPELINE = (
    "pipecat-ai 1.14 (bench/pipecat_bot.py): FastAPI WebSocket transport (protobuf), "
    "Silero VAD, Smart Turn v3, faster-whisper (the same model directory, int8), "
    "llama.cpp's server (llama-cpp-python, the same GGUF), Piper (the same voice); "
    "one pipeline per connection"
)
# r1voice's targets against the peer (issue #30)
CAPACITY_RATIO_TARGET = 2.0
TOGETHER_S = 0.3  # two speakers finishing this close "end together" (issue #30)
ONE_SESSION_P50_RATIO_TARGET = 0.8


@dataclass
class System:
    """One system under test: where its clients connect, and its processes (for CPU)."""

    url: str
    pids: list[int]
    barge_in: bool = True  # the peer takes no typed request to start a long answer
    # the stage each process is, where its threads carry no stage names (the peer's)
    process_stages: dict[int, str] | None = None
    broken: bool = False

    def stages(self) -> dict[str, tuple[str, ...]]:
        if not self.process_stages:
            return STAGES
        return {stage: (stage,) for stage in self.process_stages.values()}

    def cpu(self) -> dict[str, float]:
        """CPU seconds by thread name, or by process stage where those are given."""
        out: dict[str, float] = {}
        for pid in self.pids:
            for name, seconds in thread_cpu(pid).items():
                key = self.process_stages[pid] if self.process_stages else name
                out[key] = out.get(key, 0.0) + seconds
        return out


def _peer(args: argparse.Namespace, llm_model: str | None) -> Any:
    from app.settings import Settings
    from bench.pipecat_peer import PipecatPeer

    settings = Settings.from_env()
    return PipecatPeer(
        llm_model or settings.llm_model,
        settings.asr_model,
        settings.tts_voice,
        settings.system_prompt,
        log_prefix=args.server_log,  # beside the server's: <log>.pipecat.log, ...
    )


def compare(ours: list[dict[str, Any]], peer: list[dict[str, Any]]) -> dict[str, Any]:
    """r1voice against the peer: capacity ratio, 1-session P50 ratio, and the targets."""
    cap, peer_cap = capacity(ours)["sessions"], capacity(peer)["sessions"]
    p50 = next((lv["voice_to_voice_ms"]["p50"] for lv in ours if lv["sessions"] == 1), None)
    peer_p50 = next((lv["voice_to_voice_ms"]["p50"] for lv in peer if lv["sessions"] == 1), None)
    cap_ratio = round(cap / peer_cap, 2) if peer_cap else None
    p50_ratio = round(p50 / peer_p50, 3) if p50 is not None and peer_p50 else None
    return {
        "capacity": {"r1voice": cap, "pipecat": peer_cap, "ratio": cap_ratio},
        "one_session_p50_ms": {"r1voice": p50, "pipecat": peer_p50, "ratio": p50_ratio},
        "targets": {
            "capacity_ratio_at_least": CAPACITY_RATIO_TARGET,
            "one_session_p50_ratio_at_most": ONE_SESSION_P50_RATIO_TARGET,
            "capacity_ratio_met": None
            if cap_ratio is None and cap == 0
            else (cap_ratio is None or cap_ratio >= CAPACITY_RATIO_TARGET),
            "one_session_p50_met": None
            if p50_ratio is None
            else p50_ratio <= ONE_SESSION_P50_RATIO_TARGET,
        },
    }


def parse_levels(text: str) -> list[int]:
    """ "1,2,4" -> [1, 2, 4]: ascending, each at least 1, or a ValueError naming the bad one."""
    levels = []
    for part in text.split(","):
        if not part.strip():
            continue
        n = int(part)
        if n < 1:
            raise ValueError(f"--sessions: every level must be at least 1, got {n}")
        levels.append(n)
    if not levels or levels != sorted(set(levels)):
        raise ValueError(f"--sessions: give ascending levels without repeats, got {text!r}")
    return levels


def capacity(levels: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest N whose level held (P95 within the target, no failed turn); 0 if none."""
    held = [lv["sessions"] for lv in levels if lv["held"]]
    broke = [lv["sessions"] for lv in levels if not lv["held"]]
    return {"sessions": max(held, default=0), "first_broken": min(broke, default=None)}


async def _sweep(
    systems: dict[str, System],
    clips: dict[str, Any],
    human: list[str],
    levels: list[int],
    turns: int,
    args: argparse.Namespace,
    merge_window_ms: float,
) -> dict[str, list[dict[str, Any]]]:
    """Each level N on each system in turn (the same scripts, starts and think times),
    until every system has broken (or every level ran, with --keep-going)."""
    import random

    rng = random.Random(args.seed)
    questions = [c for name, c in sorted(clips.items()) if name.startswith("q")]
    inputs = [*questions, *(clips[n] for n in human)]
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
    for n in levels:
        scripts = [[inputs[(k + j) % len(inputs)] for j in range(turns)] for k in range(n)]
        delays, t = [], 0.0
        for _ in range(n):
            delays.append(round(t, 3))
            t += rng.expovariate(args.arrival_rate)
        think_seeds = [rng.random() for _ in scripts]
        for name, system in systems.items():
            if system.broken and not args.keep_going:
                continue
            log(f"{name}: {n} session(s) x {turns} turns, starts at {delays} s")
            thinks = [_think(seed, args.think) for seed in think_seeds]
            level = await _level(system, scripts, delays, thinks, clips["interruption"], args,
                                 merge_window_ms / 1000)  # fmt: skip
            out[name].append(level)
            v2v, pair = level["voice_to_voice_ms"], level["turns_ending_together"]
            log(
                f"  {name}: P50 {v2v['p50']} ms, P95 {v2v['p95']} ms, "
                f"{level['turns_failed']} failed: "
                + ("held" if level["held"] else "broke")
                + f"; P50 alone {pair['alone']['p50']} ms, ending together "
                f"{pair['together']['p50']} ms (n={pair['together']['n']})"
            )
            system.broken = system.broken or not level["held"]
        if all(s.broken for s in systems.values()) and not args.keep_going:
            break
    return out


async def _level(
    system: System,
    scripts: list[list[Any]],
    delays: list[float],
    think: list[Any],
    interruption: Any,
    args: argparse.Namespace,
    merge_window_s: float,
) -> dict[str, Any]:
    import asyncio

    from bench.voice.client import run_session
    from bench.voice.stats import summarize

    url = system.url
    before = system.cpu()
    own_before = _own_cpu()
    sessions_task = asyncio.gather(
        *(
            run_session(url, script, delay, args.turn_timeout, merge_window_s, think_s=th)
            for script, delay, th in zip(scripts, delays, think, strict=True)
        )
    )
    barge_task = asyncio.create_task(
        _barge_in(url, interruption, args.turn_timeout, merge_window_s, delay=1.0 + delays[-1])
        if system.barge_in
        else _not_measured("the peer takes no typed request to start a long answer")
    )
    sessions = await sessions_task
    barge = await barge_task
    cpu = stage_shares(before, system.cpu(), system.stages())
    cpu["clients_cpu_s"] = round(_own_cpu() - own_before, 2)
    turns = [t for s in sessions for t in s["turns"]]
    answered = [[t for t in s["turns"] if _answered(t)] for s in sessions]
    ok = [t for session_turns in answered for t in session_turns]
    expected = sum(len(s) for s in scripts)
    failed = expected - len(ok)
    v2v = summarize(t["voice_to_voice_ms"] for t in ok)
    held = failed == 0 and v2v["p95"] is not None and v2v["p95"] <= args.p95_target_ms
    return {
        "sessions": len(scripts),
        "session_start_offsets_s": delays,
        "turns": expected,
        "turns_ok": len(ok),
        "turns_failed": failed,
        "failures": [
            {"clip": t["clip"], "status": t["status"], "problem": t.get("problem")}
            for t in turns
            if t not in ok
        ]
        + [{"session_error": s["error"]} for s in sessions if s.get("error")],
        "voice_to_voice_ms": v2v,
        "server_breakdown_ms": {
            **{
                stage: summarize((t.get("server") or {}).get(stage) for t in ok)
                for stage in (
                    "speech_stopped_to_transcript_ms",
                    "speech_stopped_to_first_token_ms",
                    "speech_stopped_to_first_clause_ms",
                    "speech_stopped_to_first_synthesized_ms",
                    "speech_stopped_to_first_audio_ms",
                )
            },
            # the first clause's wait for its words and its synthesis (the TTS's part)
            "first_token_to_first_audio_ms": summarize(
                _between(t, "first_token", "first_audio") for t in ok
            ),
            # the turn detection's part: the speech's end (the client's clock) to the
            # server's speech_stopped (semantic_vad's doubt wait shows here)
            "speech_end_to_speech_stopped_ms": summarize(
                t.get("speech_end_to_speech_stopped_event_ms") for t in ok
            ),
        },
        "voice_to_voice_by_clip_ms": by_clip(ok),
        "turns_ending_together": ending_together(answered),
        "barge_in": barge,
        "cpu": cpu,
        "mic_max_lag_ms": max((s["mic_max_lag_ms"] for s in sessions), default=0.0),
        "held": held,
    }


def _between(turn: dict[str, Any], start: str, end: str) -> float | None:
    """ms from stage `start` to `end` of a turn's server metrics ("speech_stopped": 0)."""
    server = turn.get("server") or {}
    a, b = (
        0.0 if x == "speech_stopped" else server.get(f"speech_stopped_to_{x}_ms")
        for x in (start, end)
    )
    return None if a is None or b is None else b - a


def _answered(turn: dict[str, Any]) -> bool:
    return (
        turn["status"] in ("completed", "incomplete") and turn.get("voice_to_voice_ms") is not None
    )


def by_clip(turns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Voice-to-voice per clip asked, the slowest P50 first: which question or recording
    sets a level's P95 (a human clip whose last sentence the turn model doubts waits
    semantic_vad's doubt wait, whatever the load)."""
    from bench.voice.stats import summarize

    clips: dict[str, list[float]] = {}
    for t in turns:
        clips.setdefault(t["clip"], []).append(t["voice_to_voice_ms"])
    rows = {clip: summarize(times) for clip, times in clips.items()}
    return dict(sorted(rows.items(), key=lambda row: -(row[1]["p50"] or 0.0)))


def ending_together(sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Voice-to-voice of the turns whose speech ended within TOGETHER_S of another
    session's, against the rest: issue #30's two turns ending together against a lone
    turn (`sessions`: each session's answered turns, with `speech_end` on one clock)."""
    from bench.voice.stats import summarize

    ends = [(i, t["speech_end"]) for i, turns in enumerate(sessions) for t in turns]
    alone: list[dict[str, Any]] = []
    together: list[dict[str, Any]] = []
    for i, turns in enumerate(sessions):
        for t in turns:
            near = any(j != i and abs(end - t["speech_end"]) <= TOGETHER_S for j, end in ends)
            (together if near else alone).append(t)
    lone, both = (summarize(t["voice_to_voice_ms"] for t in part) for part in (alone, together))
    ratio = round(both["p50"] / lone["p50"], 2) if both["p50"] is not None and lone["p50"] else None

    def stages(part: list[dict[str, Any]]) -> dict[str, float | None]:
        """Which part of the turn the others slow: its end's detection or the answer."""
        wait = summarize(t.get("speech_end_to_speech_stopped_event_ms") for t in part)
        server = summarize(
            (t.get("server") or {}).get("speech_stopped_to_first_audio_ms") for t in part
        )
        # the server's part, split: the LLM writing the first clause (negative when a
        # speculative answer had it before the turn ended), its synthesis with the wait
        # for the TTS, and the hold until the turn ends or the track takes it
        split = {
            f"{a}_to_{b}_p50_ms": summarize(_between(t, a, b) for t in part)["p50"]
            for a, b in (
                ("speech_stopped", "first_clause"),
                ("first_clause", "first_synthesized"),
                ("first_synthesized", "first_audio"),
            )
        }
        return {"turn_end_wait_p50_ms": wait["p50"], "server_part_p50_ms": server["p50"], **split}

    return {
        "window_s": TOGETHER_S,
        "alone": lone,
        "together": both,
        "p50_ratio": ratio,
        "stages": {"alone": stages(alone), "together": stages(together)},
    }


def _think(seed: float, mean: float) -> Any:
    """A session's think times: uniform over 0.5x-1.5x the mean, from its own seed."""
    import random

    own = random.Random(seed)
    return lambda: own.uniform(0.5 * mean, 1.5 * mean)


async def _not_measured(why: str) -> dict[str, Any]:
    return {"measured": False, "problem": why}


async def _barge_in(
    url: str, interruption: Any, turn_timeout: float, merge_window_s: float, delay: float
) -> dict[str, Any]:
    """One interruption of a long answer while the level's sessions talk."""
    import asyncio

    from bench.voice.client import barge_in_trial
    from bench.voice.connection import Conn

    await asyncio.sleep(delay)
    try:
        conn = await Conn.open(url)
    except Exception as exc:  # reported: the level's load refused one more connection
        return {"measured": False, "problem": f"cannot connect: {exc!r}"}
    try:
        trial = await barge_in_trial(conn, interruption, turn_timeout, merge_window_s)
    finally:
        await conn.close()
    keep = ("measured", "to_last_audio_delta_ms", "to_response_done_ms", "problem")
    return {k: trial.get(k) for k in keep if k in trial}


def _children(pid: int) -> list[int]:
    from pathlib import Path

    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread name of process `pid` and its worker
    processes (the partial passes' "asr-partial"), summed by name."""
    import os
    from pathlib import Path

    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for process in (pid, *_children(pid)):
        for task in Path(f"/proc/{process}/task").glob("*"):
            try:
                name = (task / "comm").read_text().strip()
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def stage_shares(
    before: dict[str, float],
    after: dict[str, float],
    stages: dict[str, tuple[str, ...]] = STAGES,
) -> dict[str, Any]:
    """Each stage's share of the server's CPU time between two `thread_cpu` readings
    (threads of no stage are "other": the event loop, the HTTP server, ...). A thread that
    ended between the readings is missed."""
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    total = sum(v for v in spent.values() if v > 0)
    by_stage: dict[str, float] = {stage: 0.0 for stage in stages}
    by_stage["other"] = 0.0
    for name, seconds in spent.items():
        stage = next((s for s, prefixes in stages.items() if name.startswith(prefixes)), "other")
        by_stage[stage] += max(seconds, 0.0)
    return {
        "server_cpu_s": round(total, 2),
        "share": {s: round(v / total, 3) if total else None for s, v in by_stage.items()},
    }


def _own_cpu() -> float:
    import os

    t = os.times()
    return t.user + t.system


def plot(systems: dict[str, list[dict[str, Any]]], path: str, target_ms: float) -> str | None:
    """P50 and P95 against N, one pair of lines per system; the path, or None without
    matplotlib (a dev dependency)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no plot")
        return None
    from pathlib import Path

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, levels in systems.items():
        ns = [lv["sessions"] for lv in levels]
        for q, style in (("p50", "-o"), ("p95", "--s")):
            values = [lv["voice_to_voice_ms"][q] for lv in levels]
            ax.plot(ns, values, style, label=f"{name} {q.upper()}")
    ax.axhline(target_ms, color="grey", linewidth=0.8, label=f"P95 target {target_ms:g} ms")
    ax.set_xlabel("concurrent voice sessions")
    ax.set_ylabel("voice-to-voice (ms)")
    ax.legend()
    ax.grid(alpha=0.3)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
