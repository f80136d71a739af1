"""Conversation: speech over an answer; backchannels, real interruptions, non-speech.

Starts a real server (`python -m app.cli serve`) and, one session a trial, asks a typed
question for a long spoken answer; a random moment (seeded) after its first audio, a
client that behaves like a microphone (bench.voice's: 20 ms PCM16 chunks at real-time
pace, silence around the sound) says something over it:

- **backchannel**: "uh-huh", "yeah", "I see"... by Piper and espeak-ng, and "嗯", "对",
  "好的", "是的" by espeak-ng `cmn` (heard by a session set up for Mandarin speakers:
  whisper-base, language zh). Right when the answer survives: it plays to its end and its
  item holds the whole text. Target >= 19/20.
- **interruption**: "Stop.", "Wait, what about the dragon?"... by Piper and espeak-ng.
  Right when the answer is cancelled. Target 20/20; its stop time (the sound's first
  sample sent -> `speech_started`, where a client drops its queued audio) and its cancel
  (-> `response.done`) are reported.
- **false**: non-speech (a voiced cough, a sigh, knocks, a noise burst, the crowd of
  ../shared's jfk.flac). Right when the answer resumes with no words lost (its item holds
  the whole text). Target >= 18/20.

For every trial whose answer paused, the decision time: the sound's last sample sent ->
the `r1voice.interruption` verdict that decides (`?r1voice_events=1`); the issue asks
for it within ~500 ms. Parts are chosen with `--parts`: PARTS maps a name to a `Part`
(its trials, run in the run's `Context`, and their summary), so another part, such as a
long typed conversation, is one more entry. Counts and times are reported, never asserted.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.conversation import memory as conversation_memory
from bench.conversation.sounds import OverlapKind

OVERLAP_PARTS: tuple[OverlapKind, ...] = ("backchannel", "interruption", "false")


@dataclass(frozen=True)
class Context:
    """What a part gets: the server's Realtime URL, the run's options and its size."""

    url: str
    seed: int
    trials: int  # per part
    answer_tokens: int
    wait_s: float  # at most, for each thing a trial waits for
    voices: dict[str, Any]  # the TTS voices, loaded once


@dataclass(frozen=True)
class Part:
    """A part of the benchmark: its trials, and what they add up to."""

    run: Callable[[Context], list[dict[str, Any]]]
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]]


def _overlap_part(part: OverlapKind) -> Part:
    def summarize(trials: list[dict[str, Any]]) -> dict[str, Any]:
        from bench.conversation.report import summarize_part

        return summarize_part(part, trials)

    def run_part(ctx: Context) -> list[dict[str, Any]]:
        import asyncio
        import random

        from bench.conversation.sounds import overlaps
        from bench.conversation.trial import QUESTIONS, overlap_trial
        from bench.kit.log import log

        rng = random.Random(f"{ctx.seed}-{part}")
        trials = []
        for i, overlap in enumerate(overlaps(part, ctx.trials, ctx.seed, ctx.voices)):
            delay = round(rng.uniform(0.5, 3.0), 2)
            question = QUESTIONS[i % len(QUESTIONS)]
            trial = asyncio.run(
                overlap_trial(ctx.url, overlap, question, delay, ctx.answer_tokens, ctx.wait_s)
            )
            log(
                f"{part} {i + 1}/{ctx.trials} {overlap.name!r} at +{delay} s: "
                f"{trial.get('status')} {trial.get('verdicts')} heard {trial.get('heard')!r}",
                bench="conversation",
            )
            trials.append(trial)
        return trials

    return Part(run_part, summarize)


PARTS: dict[str, Part] = {part: _overlap_part(part) for part in OVERLAP_PARTS}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parts", default=",".join(PARTS), help=f"of {', '.join(PARTS)}")
    parser.add_argument("--trials", type=int, default=None, help="per part (20, quick 5)")
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=None,
        help="max_output_tokens of an answer (48, quick 32)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--trial-timeout", type=float, default=90.0, help="seconds per wait")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="run only the long-call memory part (bench/conversation/memory.py)",
    )
    conversation_memory.add_memory_arguments(parser)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import time

    from bench.conversation.report import decision_summary
    from bench.conversation.sounds import load_voices
    from bench.kit import machine
    from bench.kit.server import Server

    if getattr(args, "memory_only", False):  # in-process sessions, no server
        return conversation_memory.run_memory(args)
    quick = bool(getattr(args, "quick", False))
    parts = [p for p in args.parts.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise SystemExit(f"unknown parts {unknown}; choose from {list(PARTS)}")
    trials = args.trials if args.trials is not None else (5 if quick else 20)
    answer_tokens = args.answer_tokens or (32 if quick else 48)
    server_args = argparse.Namespace(
        port=args.port, llm_backend=None, llm_model=None, server_log=args.server_log
    )
    server = Server(server_args)
    t0 = time.monotonic()
    result: dict[str, Any] = {
        "benchmark": "conversation",
        "quick": quick,
        "seed": args.seed,
        "trials_per_part": trials,
        "answer_tokens": answer_tokens,
        "machine": machine.describe(),
        "parts": {},
        "details": {},
    }
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        ctx = Context(
            url=f"ws://127.0.0.1:{server.port}/v1/realtime?dialect=beta&r1voice_events=1",
            seed=args.seed,
            trials=trials,
            answer_tokens=answer_tokens,
            wait_s=args.trial_timeout,
            voices=load_voices() if set(parts) & set(OVERLAP_PARTS) else {},
        )
        for part in parts:
            result["details"][part] = PARTS[part].run(ctx)
            result["parts"][part] = PARTS[part].summarize(result["details"][part])
    finally:
        result["server"] = server.stop()
    every = [t for part in result["details"].values() for t in part]
    result["decision_ms"] = decision_summary(every)
    result["wall_s"] = round(time.monotonic() - t0, 1)
    return result


def format_table(result: dict[str, Any]) -> str:
    from bench.conversation.report import table

    if result.get("bench") == conversation_memory.NAME:
        return conversation_memory.format_table(result)

    return table(result)
