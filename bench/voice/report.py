"""What a result says about its run (metadata), and the short human summary."""

from __future__ import annotations

import argparse
from typing import Any

from app.audio import PROTOCOL_RATE
from bench.kit.log import log
from bench.kit.server import Server
from bench.voice.common import CHUNK_MS, TARGETS_MS
from bench.voice.connection import Conn
from bench.voice.workload import Clip, Plan


def collect_metadata(
    args: argparse.Namespace, server: Server, plan: Plan, clips: dict[str, Clip]
) -> dict[str, Any]:
    import asyncio
    import datetime
    import os
    import platform
    import subprocess
    import sys

    from app.settings import Settings

    overrides = {
        k: v
        for k, v in {"llm_backend": args.llm_backend, "llm_model": server.llm_model}.items()
        if v is not None
    }
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)  # what the server was started with
    try:
        settings = Settings.from_env(**overrides)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    served = {
        role: {"name": name, "ready": server.get(f"/v2/models/{name}/ready")[0] == 200}
        for role, name in (
            ("llm", settings.llm_model),
            ("asr", settings.asr_model),
            ("tts", settings.tts_voice),
        )
    }

    async def session_defaults() -> dict[str, Any]:
        conn = await Conn.open(f"ws://127.0.0.1:{server.port}/v1/realtime?r1voice_events=1")
        try:
            return dict(conn.session)
        finally:
            await conn.close()

    session = asyncio.run(session_defaults())

    def git(*cmd: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *cmd], cwd=os.path.dirname(__file__), capture_output=True, text=True
            ).stdout.strip()
        except OSError:
            return None

    audio = session.get("audio") or {}  # the GA shape (the default dialect) or the beta one
    turn = (audio.get("input") or {}).get("turn_detection", session.get("turn_detection"))
    formats = {d: (audio.get(d) or {}).get("format") for d in ("input", "output")}
    return {
        "llm_backend": settings.llm_backend,
        "models": served,
        "language": getattr(args, "language", None),
        "session_voice": session.get("voice") or (audio.get("output") or {}).get("voice"),
        "transcription": (audio.get("input") or {}).get("transcription")
        or session.get("input_audio_transcription"),
        "max_response_tokens": settings.max_response_tokens,
        "temperature": settings.temperature,
        "turn_detection": turn,
        "silence_window_ms": (turn or {}).get("silence_duration_ms"),
        "turn_merge_window_ms": settings.turn_merge_window_ms,
        "barge_in_hold_ms": getattr(settings, "barge_in_hold_ms", None),
        "audio_lead_ms": getattr(settings, "audio_lead_ms", None),
        "input_audio_format": formats["input"] or session.get("input_audio_format"),
        "output_audio_format": formats["output"] or session.get("output_audio_format"),
        "client_audio": {"rate_hz": PROTOCOL_RATE, "chunk_ms": CHUNK_MS, "pace": "real time"},
        "inputs": {
            name: {"kind": c.kind, "seconds": round(c.duration_s, 2), "text": c.text}
            for name, c in clips.items()
        },
        "speech_trim": "leading/trailing 10 ms frames under -20 dB of the loudest, 30 ms kept",
        "session_arrivals": {"process": "poisson", "rate_per_s": plan.arrival_rate},
        "seed": plan.seed,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "command": " ".join(sys.argv),
        "server_command": " ".join(server.command),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "notes": [
            "voice_to_voice_ms is measured on the client from the send of the last speech "
            "chunk to the first audio delta; it includes the silence window the server VAD "
            "needs to detect the end of the turn (silence_window_ms).",
            "server_breakdown_ms comes from the server's r1voice.turn.metrics, measured from "
            "the moment its VAD reported speech_stopped.",
            "barge-in times run from the send of the interruption's first chunk and include "
            "the server's minimum speech duration before it interrupts.",
            "the server sends answer audio at real-time pace (audio_lead_ms ahead of "
            "playback), so a turn's response.done comes about the answer's duration after its "
            "first audio.",
        ],
    }


def print_summary(result: dict[str, Any]) -> None:
    """A short human summary on stderr (stdout is the JSON), targets next to results."""

    def fmt(s: dict[str, Any] | None) -> str:
        if not s or not s.get("n"):
            return "n=0"
        return f"P50 {s['p50']:>7} P95 {s['p95']:>7} mean {s['mean']:>7} n={s['n']}"

    if "startup_to_ready_s" in result:
        log(f"startup to ready: {result['startup_to_ready_s']} s")
    for transport, part in result.get("transports", {}).items():
        log(f"-- over {transport}")
        print_summary(part)
    if "transport_comparison" in result:
        import json

        log("WebRTC against the WebSocket: " + json.dumps(result["transport_comparison"]))
    paired = result.get("paired")
    if paired:
        log(f"paired turns ({paired['answered']}/{paired['pairs']} answered on both):")
        for part, row in paired.items():
            if isinstance(row, dict) and "webrtc_minus_websocket" in row:
                log(
                    f"    {part:40s} WebSocket P50 {row['websocket']['p50']}, WebRTC P50 "
                    f"{row['webrtc']['p50']}, pairs' difference {fmt(row['webrtc_minus_websocket'])}"
                    f", its P50's 90% interval {row['webrtc_minus_websocket'].get('p50_ci90')}"
                )
        log(
            f"    target: the pairs' P50 difference <= {paired['target_ms']:.0f} ms: "
            f"{paired.get('target_verdict')}"
        )
    t = TARGETS_MS
    for name, level in result.get("concurrency", {}).items():
        log(
            f"{name}: voice-to-voice ms {fmt(level['voice_to_voice_ms'])}"
            f"   (target P50 <= {t['voice_to_voice_p50']:.0f}, P95 <= {t['voice_to_voice_p95']:.0f})"
        )
        for stage, s in level["server_breakdown_ms"].items():
            log(f"    {stage:34s} {fmt(s)}")
    for kind, w in result.get("wer", {}).items():
        log(f"WER {kind}: {w['wer']} over {w['n_reference_words']} words")
    b = result.get("barge_in")
    if b:
        log(
            f"barge-in ({b['measured']}/{b['trials']} measured): to last audio delta "
            f"{fmt(b['to_last_audio_delta_ms'])}; to response.done "
            f"{fmt(b['to_response_done_ms'])}   (target <= {t['barge_in']:.0f})"
        )
