"""`bench capacity`'s sweep: each level N on each system, N sessions talking at once
(Poisson starts, think times) and one barge-in trial beside them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from bench.capacity.cpu import STAGES, own_cpu, stage_shares, thread_cpu
from bench.capacity.stats import between, by_clip, ending_together, was_answered
from bench.kit.log import log


@dataclass
class System:
    """One system under test: where its clients connect, and its processes (for CPU)."""

    url: str
    pids: list[int]
    barge_in: bool = True  # the peer takes no typed request to start a long answer
    # the stage each process is, where its threads carry no stage names (the peer's)
    process_stages: dict[int, str] | None = None
    broken: bool = False
    transport: str = "websocket"  # or "twilio": the sessions are phone calls
    long_question: bytes = b""  # twilio: a spoken question whose answer runs long (mu-law)

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


async def sweep(
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
            thinks = [think_times(seed, args.think) for seed in think_seeds]
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

    from bench.capacity.phone_session import phone_barge_in, phone_session
    from bench.voice.client import run_session
    from bench.voice.stats import summarize

    url, phone = system.url, system.transport == "twilio"
    before = system.cpu()
    own_before = own_cpu()
    session = phone_session if phone else run_session
    sessions_task = asyncio.gather(
        *(
            session(url, script, delay, args.turn_timeout, merge_window_s, think_s=th)
            for script, delay, th in zip(scripts, delays, think, strict=True)
        )
    )
    barge_at = 1.0 + delays[-1]
    barge_task = asyncio.create_task(
        phone_barge_in(url, system.long_question, interruption, args.turn_timeout, barge_at)
        if phone
        else _barge_in(url, interruption, args.turn_timeout, merge_window_s, delay=barge_at)
        if system.barge_in
        else _not_measured("the peer takes no typed request to start a long answer")
    )
    sessions = await sessions_task
    barge = await barge_task
    cpu = stage_shares(before, system.cpu(), system.stages())
    cpu["clients_cpu_s"] = round(own_cpu() - own_before, 2)
    turns = [t for s in sessions for t in s["turns"]]
    answered = [[t for t in s["turns"] if was_answered(t)] for s in sessions]
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
                between(t, "first_token", "first_audio") for t in ok
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


def think_times(seed: float, mean: float) -> Any:
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

    from bench.voice.barge_in import barge_in_trial
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
