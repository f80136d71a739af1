"""Tracing's cost: voice-to-voice with spans exported to a local OTLP receiver vs tracing off, interleaved; recording's CPU per session.

Two servers run side by side on the same models: one exports every session's spans over
OTLP/HTTP to a receiver in this process (R1VOICE_OTEL_ENDPOINT), the other has tracing
off entirely (no endpoint, no session reports: no tracer at all). Each round speaks the
same clip once to each, the order alternating, one session at a time, so both see the
same machine load. Reported: each side's voice-to-voice P50/P95 (last speech chunk sent
-> first answer audio delta, at real-time microphone pace, server VAD), the P50 of the
paired differences (on - off) with its 90% interval (sign test), and the spans received.
Recording: a CallRecorder fed a minute of both tracks in 20 ms pieces, then written;
its CPU seconds per minute of call (this process's CPU clock).
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.kit.log import log

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm-backend", choices=["embedded", "transformers"], default=None)
    parser.add_argument("--llm-model", default=None, help="passed to `serve`")
    parser.add_argument("--rounds", type=int, default=None, help="paired turns (8, quick 4)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="seconds per turn")
    parser.add_argument("--server-log", default=None, help="keep the servers' output here")


def _server(args: argparse.Namespace, env: dict[str, str], log_suffix: str) -> Any:
    from bench.kit.server import Server

    ns = argparse.Namespace(**{**vars(args), "port": 0, "language": None})
    if args.server_log:
        ns.server_log = f"{args.server_log}.{log_suffix}"
    server = Server(ns)
    server.env.update(env)
    return server


async def _rounds(on: Any, off: Any, clip: Any, rounds: int, turn_s: float) -> dict[str, Any]:
    import asyncio

    from bench.voice.client import open_connection, voice_turn

    turns: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for r in range(rounds):
        order = [("on", on), ("off", off)] if r % 2 == 0 else [("off", off), ("on", on)]
        for side, server in order:
            conn = await open_connection(f"ws://127.0.0.1:{server.port}/v1/realtime")
            try:
                await asyncio.sleep(0.5)  # the microphone is on before anyone speaks
                turn = await voice_turn(conn, clip, turn_s)
            finally:
                await conn.close()
            turns[side].append(turn)
            log(f"  round {r + 1} {side}: voice-to-voice {turn.get('voice_to_voice_ms')} ms")
    return turns


def recording_cpu(seconds: float = 60.0) -> dict[str, Any]:
    """CPU seconds a minute of a recorded call costs: both tracks in 20 ms pieces (the
    user's as 16 kHz samples, the answer's as 24 kHz PCM16), then the WAV written."""
    import tempfile
    import time

    import numpy as np

    from app.protocol.session_schema import AudioFormat
    from app.recording import CallRecorder, RecordingStore

    fmt = AudioFormat()
    rng = np.random.default_rng(0)
    user = (rng.standard_normal(320) * 0.1).astype(np.float32)
    answer = (rng.standard_normal(480) * 3000).astype("<i2").tobytes()
    with tempfile.TemporaryDirectory() as folder:
        recorder = CallRecorder(RecordingStore(folder), "sess_bench", 3600)
        began = time.process_time()
        for _ in range(int(seconds * 50)):
            recorder.heard(user)
            recorder.played(answer, fmt)
        taking = time.process_time() - began
        from app.recording.tracks import stereo

        began = time.process_time()
        recorder.store.write("sess_bench", stereo(recorder.user, recorder.assistant), {})
        writing = time.process_time() - began
    return {
        "call_s": seconds,
        "cpu_s_taking_audio": round(taking, 3),
        "cpu_s_writing": round(writing, 3),
        "cpu_percent_of_one_core": round(100 * (taking + writing) / seconds, 2),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import os

    from bench.voice.otlp_sink import OtlpSink
    from bench.voice.stats import median_interval, summarize
    from bench.voice.workload import prepare_clips

    quick = bool(getattr(args, "quick", False))
    rounds = args.rounds or (4 if quick else 8)
    clip = prepare_clips(["jfk"])["jfk"]
    sink = OtlpSink()
    sink.start()
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)  # the off server must not trace
    on = _server(args, {"R1VOICE_OTEL_ENDPOINT": sink.url}, "on")
    off = _server(args, {"R1VOICE_SESSION_REPORTS": "0", "R1VOICE_OTEL_ENDPOINT": ""}, "off")
    result: dict[str, Any] = {"benchmark": "tracing", "quick": quick, "rounds": rounds}
    try:
        on.start()
        off.start()
        on.wait_ready(args.ready_timeout)
        off.wait_ready(args.ready_timeout)
        log(f"both servers ready; {rounds} paired round(s)")
        turns = asyncio.run(_rounds(on, off, clip, rounds, args.turn_timeout))
    finally:
        result["servers"] = {"on": on.stop(), "off": off.stop()}
        sink.stop()
    v2v = {side: [t.get("voice_to_voice_ms") for t in turns[side]] for side in turns}
    result["voice_to_voice_ms"] = {side: summarize(values) for side, values in v2v.items()}
    diffs = [a - b for a, b in zip(v2v["on"], v2v["off"], strict=True) if a and b]
    result["paired_diff_ms"] = {
        "p50": summarize(diffs)["p50"],
        "interval_90": median_interval(diffs),
        "n": len(diffs),
    }
    result["spans_received"] = sink.spans
    result["recording"] = recording_cpu()
    result["load"] = os.getloadavg()
    return result


def format_table(result: dict[str, Any]) -> str:
    v2v, diff = result["voice_to_voice_ms"], result["paired_diff_ms"]
    lines = [
        f"{'tracing':8} {'n':>3} {'P50 ms':>8} {'P95 ms':>8}",
        *(f"{s:8} {v2v[s]['n']:>3} {v2v[s]['p50']!s:>8} {v2v[s]['p95']!s:>8}" for s in v2v),
        f"paired on - off: P50 {diff['p50']} ms, 90% interval {diff['interval_90']} "
        f"(n={diff['n']}); spans received {result['spans_received']}",
        f"recording: {result['recording']['cpu_percent_of_one_core']}% of one core "
        f"({result['recording']['cpu_s_taking_audio']} s + {result['recording']['cpu_s_writing']}"
        f" s writing per {result['recording']['call_s']:.0f} s call); load {result['load']}",
    ]
    return "\n".join(lines)
