"""The client side of a run: each concurrency level (Poisson session starts), then the
barge-in trials; over one transport, or over each in turn on the same server."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.kit.log import log
from bench.kit.server import Server
from bench.voice.barge_in import barge_in_trial
from bench.voice.client import (
    open_connection,
    pause_after,
    run_session,
    voice_turn,
)
from bench.voice.common import TARGETS_MS
from bench.voice.cpu import CpuMeter
from bench.voice.stats import level_summary, summarize, wer_summary
from bench.voice.transports import TRANSPORTS, compare_transports, paired_summary
from bench.voice.workload import QUESTIONS, Clip, Plan


def transport_url(server: Server, transport: str) -> str:
    if transport == "webrtc":  # the offer goes to {base}/v1/realtime/calls
        return server.base
    return f"ws://127.0.0.1:{server.port}/v1/realtime?r1voice_events=1"


async def run_clients(
    server: Server,
    plan: Plan,
    clips: dict[str, Clip],
    metadata: dict[str, Any],
    transports: list[str] | None = None,
) -> dict[str, Any]:
    """`transports` None: the WebSocket alone, reported as it always was; else each of
    them in turn (same workload, same seed), under "transports", and their comparison."""
    if transports is None:
        return await _run_transport(server, plan, clips, metadata, "websocket", cpu=False)
    out: dict[str, Any] = {"transports": {}}
    for transport in transports:
        log(f"transport: {transport}")
        out["transports"][transport] = await _run_transport(
            server, plan, clips, metadata, transport, cpu=True
        )
    out["transport_comparison"] = compare_transports(out["transports"])
    if plan.paired and set(transports) == set(TRANSPORTS):
        log(f"paired: {plan.paired} round(s), each clip over one transport then the other")
        out["paired"] = await _paired(server, plan, clips, metadata)
    return out


async def _paired(
    server: Server, plan: Plan, clips: dict[str, Clip], metadata: dict[str, Any]
) -> dict[str, Any]:
    """A WebSocket session and a WebRTC call open side by side; each clip of the
    1-session script (`plan.turns` clips) is said over one and then the other, the first alternating round by
    round, so both transports' turns of a clip meet the same machine and history."""
    import asyncio

    merge_window_s = metadata["turn_merge_window_ms"] / 1000
    single = [
        *(clips[n] for n in plan.human_clips),
        *(clips[f"q{i + 1}"] for i in range(len(QUESTIONS))),
    ]
    script = [single[j % len(single)] for j in range(plan.turns)]  # the 1-session script
    conns = {t: await open_connection(transport_url(server, t)) for t in TRANSPORTS}
    pairs: list[dict[str, dict[str, Any]]] = []
    try:
        await asyncio.sleep(0.5)  # the microphones are on before anyone speaks
        for r in range(plan.paired):
            order = list(TRANSPORTS) if r % 2 == 0 else list(reversed(TRANSPORTS))
            for clip in script:
                pair: dict[str, dict[str, Any]] = {}
                for transport in order:
                    turn = await voice_turn(conns[transport], clip, plan.turn_timeout)
                    pair[transport] = turn
                    await pause_after(turn["speech_end"], merge_window_s)
                pairs.append(pair)
    finally:
        for conn in conns.values():
            await conn.close()
    summary = paired_summary(pairs)
    gap = summary["voice_to_voice_audible_ms"]["webrtc_minus_websocket"]
    log(
        f"  paired: WebRTC - WebSocket P50 {gap['p50']} ms (n={gap['n']}; 90% interval "
        f"{gap['p50_ci90']}): {summary['target_verdict']}"
    )
    return {**summary, "details": pairs}


async def _run_transport(
    server: Server,
    plan: Plan,
    clips: dict[str, Clip],
    metadata: dict[str, Any],
    transport: str,
    cpu: bool,
) -> dict[str, Any]:
    import os
    import random

    url = transport_url(server, transport)
    merge_window_s = metadata["turn_merge_window_ms"] / 1000
    human = [clips[n] for n in plan.human_clips]
    questions = [clips[f"q{i + 1}"] for i in range(len(QUESTIONS))]
    # One session starts with the human clips; concurrent sessions start with questions
    # (shorter), and the human clips come later in the rotation.
    single, concurrent = [*human, *questions], [*questions, *human]
    rng = random.Random(plan.seed)
    levels: dict[str, Any] = {}
    all_turns: list[dict[str, Any]] = []
    for n_sessions in plan.levels:
        n_turns = plan.turns if n_sessions == 1 else plan.turns_concurrent
        # Session k says inputs k, k+1, ...: every session starts differently.
        inputs = single if n_sessions == 1 else concurrent
        scripts = [
            [inputs[(k + j) % len(inputs)] for j in range(n_turns)] for k in range(n_sessions)
        ]
        delays, t = [], 0.0
        for _ in range(n_sessions):
            delays.append(round(t, 3))
            t += rng.expovariate(plan.arrival_rate)
        log(f"{n_sessions} session(s) x {n_turns} turns, starts at {delays} s")
        server_cpu, client_cpu = CpuMeter(server.proc.pid), CpuMeter(os.getpid())
        server_cpu.start()
        client_cpu.start()
        sessions = await _gather(
            run_session(url, script, delay, plan.turn_timeout, merge_window_s)
            for script, delay in zip(scripts, delays, strict=True)
        )
        turns = [turn for s in sessions for turn in s["turns"]]
        all_turns += turns
        level = level_summary(n_sessions, n_turns, delays, sessions)
        if cpu:
            level["cpu"] = {
                "server": server_cpu.stop(n_sessions),
                "client": client_cpu.stop(n_sessions),
            }
        levels[f"sessions_{n_sessions}"] = level
        v2v = level["voice_to_voice_ms"]
        log(f"  voice-to-voice P50 {v2v['p50']} ms, P95 {v2v['p95']} ms (n={v2v['n']})")
    out: dict[str, Any] = {"concurrency": levels, "wer": wer_summary(all_turns, clips)}
    if plan.barge_in > 0:
        log(f"barge-in: {plan.barge_in} trial(s)")
        conn = await open_connection(url)
        trials = []
        try:
            for _ in range(plan.barge_in):
                trials.append(
                    await barge_in_trial(
                        conn, clips["interruption"], plan.turn_timeout, merge_window_s
                    )
                )
        finally:
            await conn.close()
        measured = [t for t in trials if t["measured"]]
        out["barge_in"] = {
            "trials": len(trials),
            "measured": len(measured),
            "interruption": clips["interruption"].text,
            "to_last_audio_delta_ms": summarize(t["to_last_audio_delta_ms"] for t in measured),
            "to_response_done_ms": summarize(t["to_response_done_ms"] for t in measured),
            "to_speech_started_ms": summarize(t["to_speech_started_ms"] for t in measured),
            "audio_deltas_after_speech_started": sum(
                t.get("audio_deltas_after_speech_started") or 0 for t in measured
            ),
            "target_ms": TARGETS_MS["barge_in"],
            "details": trials,
        }
        if transport == "webrtc":
            for key in ("to_output_audio_buffer_cleared_ms", "cleared_to_last_audio_ms"):
                out["barge_in"][key] = summarize(t.get(key) for t in measured)
    return out


async def _gather(coros: Iterable[Any]) -> list[Any]:
    import asyncio

    return list(await asyncio.gather(*coros))
