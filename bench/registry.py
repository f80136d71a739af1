"""The benches `r1voice bench NAME` runs: each name, the module that runs it and the line
of help the command lists, so that the CLI imports only the bench it runs.

A bench module exposes
    add_arguments(parser: argparse.ArgumentParser) -> None
    run(args: argparse.Namespace) -> dict        (the JSON result)
    format_table(result: dict) -> str            (optional: a table printed with it)
and keeps its heavy imports inside run(). Its help line here is the first line of its
docstring (tests/bench/test_layout.py holds them together).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Bench:
    """One `r1voice bench NAME`: the module that runs it and its one line of help."""

    module: str
    help: str


BENCHES: dict[str, Bench] = {
    "engine": Bench(
        "bench.engine.engine",
        "Engine throughput: our engine (1 and N AsyncLLM streams) vs transformers and "
        "llama.cpp, same run.",
    ),
    "voice": Bench(
        "bench.voice.voice",
        "Voice path end to end: voice-to-voice latency, stage breakdown, ASR WER, barge-in.",
    ),
    "tracing": Bench(
        "bench.voice.tracing_cost",
        "Tracing's cost: voice-to-voice with spans exported to a local OTLP receiver vs "
        "tracing off, interleaved; recording's CPU per session.",
    ),
    "decode": Bench(
        "bench.engine.decode",
        "One stream's decode: the engine with and without speculation against llama.cpp with "
        "and without prompt lookup, on voice chats.",
    ),
    "decode-streams": Bench(
        "bench.engine.decode_streams",
        "N streams' decode together: the engine's concurrent AsyncLLM streams against "
        "llama.cpp's batched sequences (its n_parallel), on voice chats.",
    ),
    "cold-start": Bench(
        "bench.engine.cold_start",
        "Cold start: `r1voice serve` from process start to ready and to its first answer.",
    ),
    "quant": Bench(
        "bench.engine.quant",
        "Quantization: none / int8 / int4 weight bytes, perplexity, greedy agreement and speed.",
    ),
    "serve": Bench(
        "bench.engine.serve",
        "Serving under load: static vs fcfs vs priority scheduling, Poisson arrivals, long tail.",
    ),
    "prefix": Bench(
        "bench.engine.prefix",
        "Prefix KV reuse: no cache vs prefix cache (FCFS) vs + cache-aware order vs + clustering.",
    ),
    "load": Bench(
        "bench.reliability.load",
        "`r1voice bench load`: overload, hostile requests beside normal ones, then SIGTERM.",
    ),
    "soak": Bench(
        "bench.reliability.soak",
        "`r1voice bench soak`: many Realtime sessions that misbehave, then a leak check.",
    ),
    "turns": Bench(
        "bench.conversation.turns",
        "Turn taking: false cut-offs per turn detection and eagerness, false barge-ins from echo.",
    ),
    "asr": Bench(
        "bench.asr.asr",
        "Whisper's encoder window: WER and time of a pass over a fitted window against 30 s.",
    ),
    "answers": Bench(
        "bench.answers.answers",
        "Answers worth hearing: accuracy, time to first token and length of each bundled LLM's",
    ),
    "capacity": Bench(
        "bench.capacity.capacity",
        "How many conversations one box holds: N voice sessions at once, N swept until it breaks.",
    ),
    "conversation": Bench(
        "bench.conversation.conversation",
        "Conversation: speech over an answer; backchannels, real interruptions, non-speech.",
    ),
    "tools": Bench(
        "bench.tools.tools",
        "Tools that take seconds: first spoken word and answer time, blocking vs background.",
    ),
}


def load(name: str) -> ModuleType:
    """The module of bench `name`, imported now."""
    if name not in BENCHES:
        raise ValueError(f"no bench named {name!r}: choose one of {', '.join(BENCHES)}")
    return importlib.import_module(BENCHES[name].module)
