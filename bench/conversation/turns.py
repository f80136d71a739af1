"""Turn taking: false cut-offs per turn detection and eagerness, false barge-ins from echo.

Starts a real server (`python -m app.cli serve`) and drives Realtime WebSocket clients
that behave like a microphone (bench.voice's client: 20 ms PCM16 chunks at real-time
pace, silence between speech).

- **False cut-offs**: utterances with natural mid-sentence pauses, each said once per
  mode (server_vad 500 ms; semantic_vad at eagerness low / medium / high / auto):
  jfk.flac as spoken (its rhetorical pauses are about 1 s), and sentences spoken by
  Piper and espeak-ng in two or three parts with 0.6-1.5 s of silence inserted at a
  phrase boundary (seeded). Turns have `create_response: false`, so only turn detection
  is measured. An utterance is *split* when the server commits more than one user turn
  for it (a fragment later merged and deleted counts: a client saw it).
- **Echo**: typed questions whose spoken answers are fed back into the microphone as a
  loudspeaker would (after 100 ms, attenuated by 20 and by 30 dB, under no other
  speech): an answer the server cancels, or any `speech_started` while it plays, is a
  false barge-in. The page asks the browser for echo cancellation; this is what is left
  for the server when the room's residual echo gets through.

Counts are reported, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import random
from typing import Any

from app.protocol.server_events import InputAudioCommitted, ItemDeleted
from bench.conversation.echo import echo_trials
from bench.voice.workload import PAUSED_SENTENCES

MODES: dict[str, dict[str, Any]] = {
    "server_vad": {"type": "server_vad"},
    "semantic_low": {"type": "semantic_vad", "eagerness": "low"},
    "semantic_medium": {"type": "semantic_vad", "eagerness": "medium"},
    "semantic_high": {"type": "semantic_vad", "eagerness": "high"},
    "semantic_auto": {"type": "semantic_vad", "eagerness": "auto"},
}
MAX_WAIT_S = {"low": 8.0, "medium": 4.0, "high": 2.0, "auto": 4.0}  # OpenAI's documented


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)}")
    parser.add_argument("--echo", type=int, default=None, help="answers per echo level (20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")


def _utterances(quick: bool, seed: int) -> list[tuple[str, str, Any]]:
    """(name, kind, float samples at the wire rate) with pauses inside."""
    import numpy as np

    from app.audio import PROTOCOL_RATE
    from app.catalog import registry as model_registry
    from app.speech.espeak_tts import EspeakTTS
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import prepare_clips, trim_silence

    rng = random.Random(seed)
    jfk = prepare_clips(["jfk"])["jfk"]
    out = [("jfk", "human", np.frombuffer(jfk.pcm, dtype=np.int16).astype(np.float32) / 32768)]
    piper = PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="piper")
    voices: list[tuple[str, Any]] = [("piper", piper), ("espeak", EspeakTTS("en-us"))]
    sentences = PAUSED_SENTENCES[:3] if quick else PAUSED_SENTENCES
    for kind, tts in voices:
        for i, parts in enumerate(sentences):
            whole = trim_silence(
                np.asarray(tts.synthesize(" ".join(parts), PROTOCOL_RATE)), PROTOCOL_RATE
            )
            pieces, at = [], 0
            for j in range(1, len(parts)):
                # Cut the whole sentence where its first j parts end (so the voice keeps
                # the rising, unfinished prosody of a mid-sentence pause: a part spoken on
                # its own sounds finished): the quietest 10 ms within 150 ms of where
                # those parts, said alone, would end.
                head = " ".join(parts[:j])
                guess = trim_silence(
                    np.asarray(tts.synthesize(head, PROTOCOL_RATE)), PROTOCOL_RATE
                ).size
                cut = _quietest(
                    whole,
                    min(guess, whole.size - 1),
                    PROTOCOL_RATE // 100,
                    PROTOCOL_RATE * 15 // 100,
                )
                pieces += [
                    whole[at:cut],
                    np.zeros(int(rng.uniform(0.6, 1.5) * PROTOCOL_RATE), np.float32),
                ]
                at = cut
            pieces.append(whole[at:])
            out.append((f"{kind}-{i + 1}", "tts", np.concatenate(pieces).astype(np.float32)))
    return out


def _quietest(samples: Any, around: int, frame: int, reach: int) -> int:
    """The start of the quietest `frame` (RMS) within `reach` samples of `around`."""
    import numpy as np

    lo, hi = max(around - reach, frame), min(around + reach, samples.size - frame)
    starts = list(range(lo, max(hi, lo + 1), frame))
    energy = [float(np.sqrt(np.mean(samples[s : s + frame] ** 2))) for s in starts]
    return starts[int(np.argmin(energy))]


async def _cutoffs(url: str, mode: str, utterances: list[tuple[str, str, Any]]) -> dict[str, Any]:
    import asyncio

    from app.audio import float_to_pcm16
    from bench.voice.connection import Conn

    detection = {**MODES[mode], "create_response": False}
    wait_s = MAX_WAIT_S.get(detection.get("eagerness", ""), 1.0) + 3.0
    conn = await Conn.open(url)
    rows: list[dict[str, Any]] = []
    try:
        await conn.send({"type": "session.update", "session": {"turn_detection": detection}})
        await asyncio.sleep(0.5)
        for name, kind, samples in utterances:
            start = len(conn.log)
            _, last_sent = await conn.say(float_to_pcm16(samples))
            try:
                await conn.wait_for(
                    lambda t, e, s=last_sent: e["type"] == InputAudioCommitted.TYPE and t > s,
                    start,
                    wait_s,
                )
                ended = True
            except TimeoutError:
                ended = False
            await asyncio.sleep(2.0)  # past the merge window: the next one is a new turn
            events = [e["type"] for _, e in conn.events(start)]
            turns = events.count(InputAudioCommitted.TYPE)
            rows.append(
                {
                    "utterance": name,
                    "kind": kind,
                    "turns": turns,
                    "deleted": events.count(ItemDeleted.TYPE),
                    "ended": ended,
                }
            )
    finally:
        await conn.close()
    split = sum(1 for r in rows if r["turns"] > 1)
    return {
        "utterances": len(rows),
        "split": split,
        "split_share": round(split / max(len(rows), 1), 3),
        "never_ended": sum(1 for r in rows if not r["ended"]),
        "rows": rows,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    from bench.kit.log import log as bench_log

    log = functools.partial(bench_log, bench="turns")
    from bench.kit.server import Server

    quick = bool(getattr(args, "quick", False))
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; choose from {list(MODES)}")
    echo_answers = args.echo if args.echo is not None else (3 if quick else 20)
    utterances = _utterances(quick, args.seed)
    server_args = argparse.Namespace(
        port=args.port, llm_backend=None, llm_model=None, server_log=args.server_log
    )
    server = Server(server_args)
    result: dict[str, Any] = {"benchmark": "turns", "quick": quick, "seed": args.seed}
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        url = f"ws://127.0.0.1:{server.port}/v1/realtime?dialect=beta"
        result["cutoffs"] = {}
        for mode in modes:
            log(f"false cut-offs: {mode}, {len(utterances)} utterances")
            result["cutoffs"][mode] = asyncio.run(_cutoffs(url, mode, utterances))
        result["echo"] = {}
        for db in (30.0, 20.0) if echo_answers else ():
            log(f"echo at -{db:.0f} dB: {echo_answers} answers")
            result["echo"][f"minus_{db:.0f}_db"] = asyncio.run(echo_trials(url, echo_answers, db))
    finally:
        result["server"] = server.stop()
    result["summary"] = {
        "split_share": {m: r["split_share"] for m, r in result["cutoffs"].items()},
        "false_barge_ins": {
            k: f"{r['false_barge_ins']}/{r['answers']}" for k, r in result["echo"].items()
        },
    }
    return result
