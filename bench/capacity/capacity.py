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

`--transport twilio` sweeps phone callers beside the WebSocket sessions, level by level
on the same server, scripts, starts and think times (bench/capacity/phone_session.py: each
caller speaks Twilio's media stream, 20 ms mu-law 8 kHz frames at real-time pace, marks
echoed), and reports both capacities at the same P95 limit.

`--peer pipecat` sweeps the stack a user would build instead (bench/capacity/pipecat_peer.py: a
Pipecat pipeline on the same models) level by level after r1voice, on the same scripts,
starts and think times, and reports both capacities and their ratio.

The clients run in this process, on the same cores as the server, as a user's browser
would not: their cost (JSON and base64 of 50 chunks a second per session) is reported as
this process's CPU time. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.capacity.plot import plot
from bench.capacity.stats import capacity, compare, parse_levels
from bench.capacity.sweep import System, sweep
from bench.kit.log import log

P95_TARGET_MS = 1500.0
DEFAULT_LEVELS = "1,2,4,6,8,12,16"


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
    parser.add_argument(
        "--transport", choices=["websocket", "twilio"], default="websocket",
        help="twilio: also sweep phone callers (Twilio media streams) on the same server, "
        "level by level after the WebSocket's",
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
    from bench.kit.machine import describe
    from bench.kit.server import Server
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
            "transport": args.transport,
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
        if args.transport == "twilio":
            systems["twilio"] = _phone_system(server)
        if peer is not None:
            result["peer_startup_s"] = round(peer.start(args.ready_timeout), 3)
            llm_pid, bot_pid = peer.pids
            stages = {llm_pid: "llm (llama.cpp)", bot_pid: "pipeline (vad, turn, asr, tts)"}
            systems["pipecat"] = System(peer.url, peer.pids, False, stages)
        merge_window_ms = Settings.from_env().turn_merge_window_ms  # the server inherits our env
        sweeps = asyncio.run(sweep(systems, clips, human, levels, turns, args, merge_window_ms))
        result["levels"] = sweeps["r1voice"]
        result["capacity"] = capacity(sweeps["r1voice"])
        if "twilio" in sweeps:
            result["twilio"] = {"levels": sweeps["twilio"], "capacity": capacity(sweeps["twilio"])}
            result["transports"] = {
                "sessions_held": {
                    "websocket": result["capacity"]["sessions"],
                    "twilio": result["twilio"]["capacity"]["sessions"],
                },
                "p95_target_ms": args.p95_target_ms,
            }
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
        if "twilio" in result:
            shown["r1voice (twilio)"] = result["twilio"]["levels"]
        if peer is not None:
            shown["pipecat"] = result["peer"].get("levels", [])
        result["plot"] = plot(shown, args.plot, args.p95_target_ms)
    return result


PIPECAT_PIPELINE = (
    "pipecat-ai 1.14 (bench/capacity/pipecat_bot.py): FastAPI WebSocket transport (protobuf), "
    "Silero VAD, Smart Turn v3, faster-whisper (the same model directory, int8), "
    "llama.cpp's server (llama-cpp-python, the same GGUF), Piper (the same voice); "
    "one pipeline per connection"
)


def _phone_system(server: Any) -> Any:
    """Phone callers on the same server: its media stream, a spoken long question."""
    from bench.capacity.phone_session import STREAM_PATH, ulaw
    from bench.capacity.sweep import System
    from bench.voice.phone import LONG_QUESTION, _piper
    from bench.voice.workload import Clip

    question = ulaw(Clip("long", "tts", LONG_QUESTION, _piper()(LONG_QUESTION)).pcm)
    url = f"ws://127.0.0.1:{server.port}{STREAM_PATH}"
    return System(url, [server.proc.pid], transport="twilio", long_question=question)


def _peer(args: argparse.Namespace, llm_model: str | None) -> Any:
    from app.settings import Settings
    from bench.capacity.pipecat_peer import PipecatPeer

    settings = Settings.from_env()
    return PipecatPeer(
        llm_model or settings.llm_model,
        settings.asr_model,
        settings.tts_voice,
        settings.system_prompt,
        log_prefix=args.server_log,  # beside the server's: <log>.pipecat.log, ...
    )
