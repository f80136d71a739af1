"""Voice path end to end: voice-to-voice latency, stage breakdown, ASR WER, barge-in.

Starts a real server (`python -m app.cli serve`) as a subprocess, waits for
/v2/health/ready, then drives real Realtime WebSocket clients that behave like a
microphone: 20 ms chunks of PCM16 24 kHz mono sent at real-time pace, speech then
silence, without pause, while the answers stream back. Server VAD ends each turn.

Measured on the client (monotonic clock of this process):
- voice-to-voice: the chunk holding the last speech sample is sent -> the first
  `response.audio.delta` of the answer arrives. It includes the VAD silence window
  (`silence_duration_ms`, 500 ms by default) the server must hear to know the turn ended;
- the server's breakdown from its `r1voice.turn.metrics` event (end of speech ->
  transcript -> first token -> first audio);
- ASR word error rate of the human recordings (and of the synthesized questions);
- barge-in: the first sample of an interruption is sent -> the server stops sending
  the interrupted answer (its last audio delta, and its `response.done` "cancelled").

With --transport webrtc|both the same clients run over WebRTC calls as well
(POST /v1/realtime/calls; rtc_connection.py): the answer's first audio is its first
audible frame off the call's track (and, reported beside it, the data channel's
`output_audio_buffer.started`); barge-in's stop is its last audible frame (and
`output_audio_buffer.cleared`). Each level also reports the CPU time of the server
process and of this one, so WebRTC's cost per session (Opus, SRTP) shows against the
WebSocket's on the same workload (transports.py). With both, `--paired N` says each clip
of the 1-session script over one transport and then the other, on two connections open
side by side, and reports the P50 of the pairs' differences part by part (runner.py).

1 and 4 concurrent sessions (session starts are Poisson arrivals, seeded). Timings are
reported, never asserted; targets are printed next to them.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.kit.log import log
from bench.kit.server import Server
from bench.voice.common import TARGETS_MS
from bench.voice.report import collect_metadata, print_summary
from bench.voice.runner import run_clients
from bench.voice.transports import parse_transport
from bench.voice.workload import HUMAN_CLIPS, HUMAN_CLIPS_ZH, QUESTIONS, Plan, prepare_clips

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-backend",
        choices=["embedded", "transformers"],
        default=None,
        help="passed to `serve` (default: the server's default)",
    )
    parser.add_argument("--llm-model", default=None, help="passed to `serve`")
    parser.add_argument(
        "--turn-detection",
        choices=["server_vad", "semantic_vad"],
        default=None,
        help="the sessions' turn detection (default: the server's default)",
    )
    parser.add_argument(
        "--sessions",
        default="1,4",
        help="concurrency levels to run, comma separated (default: 1,4)",
    )
    parser.add_argument(
        "--turns", type=int, default=None, help="voice turns per session (default 6, quick 3)"
    )
    parser.add_argument(
        "--turns-concurrent",
        type=int,
        default=None,
        help="voice turns per session when sessions > 1 (default 4, quick 2)",
    )
    parser.add_argument(
        "--barge-in", type=int, default=None, help="barge-in trials (default 5, quick 2)"
    )
    parser.add_argument(
        "--arrival-rate",
        type=float,
        default=2.0,
        help="Poisson arrival rate of session starts, per second (default 2)",
    )
    parser.add_argument(
        "--language",
        default=None,
        choices=["zh"],
        help="zh: a Mandarin server (whisper-base, voice auto) and Mandarin speech",
    )
    parser.add_argument(
        "--transport",
        choices=["websocket", "webrtc", "both", "twilio", "xiaozhi"],
        default=None,
        help="the clients' transport; given: each level, CPU and barge-in per transport, "
        "and WebRTC against the WebSocket when both (default: the WebSocket alone); "
        "twilio: phone calls against the WebSocket, paired (phone.py); xiaozhi: an "
        "emulated ESP32 board against the WebSocket, paired (xiaozhi.py)",
    )
    parser.add_argument(
        "--protocol",
        choices=["realtime", "live"],
        default="realtime",
        help="live: GPT-Live's WebSocket against the Realtime one, paired (live_protocol.py)",
    )
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        help="with --transport both: this many rounds of the 1-session clips, each said "
        "over the WebSocket and over WebRTC one after the other; reports the P50 of the "
        "pairs' differences (default 0: none)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="seconds per turn")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    if getattr(args, "transport", None) == "twilio":
        from bench.voice.phone import run_twilio

        return run_twilio(args)
    if getattr(args, "protocol", "realtime") == "live":
        from bench.voice.live_protocol import run_live

        return run_live(args)
    if getattr(args, "transport", None) == "xiaozhi":
        from bench.voice.xiaozhi import run_xiaozhi

        return run_xiaozhi(args)
    quick = bool(getattr(args, "quick", False))
    plan = Plan(
        levels=[int(x) for x in str(args.sessions).split(",") if x.strip()],
        turns=args.turns or (3 if quick else 6),
        turns_concurrent=args.turns_concurrent or (2 if quick else 4),
        barge_in=args.barge_in if args.barge_in is not None else (2 if quick else 5),
        arrival_rate=args.arrival_rate,
        seed=args.seed,
        turn_timeout=args.turn_timeout,
        human_clips=["jfk"] if quick else list(HUMAN_CLIPS),
        paired=getattr(args, "paired", 0),
    )
    if args.language == "zh":
        plan.human_clips = ["zh-funasr"] if quick else list(HUMAN_CLIPS_ZH)
    log(f"preparing audio ({len(plan.human_clips)} human clips, {len(QUESTIONS)} questions)")
    clips = prepare_clips(plan.human_clips, args.language)
    server = Server(args)
    transports = parse_transport(getattr(args, "transport", None))
    result: dict[str, Any] = {"benchmark": "voice", "quick": quick, "targets_ms": TARGETS_MS}
    if transports is not None:
        from bench.kit.machine import describe

        result["transport"] = args.transport
        result["machine"] = describe()
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        log(f"server ready after {result['startup_to_ready_s']} s on port {server.port}")
        result["metadata"] = collect_metadata(args, server, plan, clips)
        result.update(asyncio.run(run_clients(server, plan, clips, result["metadata"], transports)))
    finally:
        result["server"] = server.stop()
    print_summary(result)
    return result
