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

MODES: dict[str, dict[str, Any]] = {
    "server_vad": {"type": "server_vad"},
    "semantic_low": {"type": "semantic_vad", "eagerness": "low"},
    "semantic_medium": {"type": "semantic_vad", "eagerness": "medium"},
    "semantic_high": {"type": "semantic_vad", "eagerness": "high"},
    "semantic_auto": {"type": "semantic_vad", "eagerness": "auto"},
}
MAX_WAIT_S = {"low": 8.0, "medium": 4.0, "high": 2.0, "auto": 4.0}  # OpenAI's documented
# Sentences cut at a phrase boundary, where people pause to think.
PAUSED_SENTENCES = [
    ("I would like to book a table for", "two people tomorrow evening."),
    ("Can you tell me how to get to", "the train station from here?"),
    ("My favourite thing about the summer is", "the long warm evenings."),
    ("What I really want to know is", "whether it will rain on Saturday."),
    ("Please remind me to call my sister", "when I get home", "after work."),
    ("The best way to learn a language is", "to speak it every day."),
]
ECHO_QUESTIONS = [
    "Tell me about the moon in three sentences.",
    "Describe a sunny beach in three sentences.",
    "Tell me about elephants in three sentences.",
    "Explain how bread is made in three sentences.",
    "Describe autumn in a forest in three sentences.",
]


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

    from app.models import registry as model_registry
    from app.models.espeak_tts import EspeakTTS
    from app.models.piper_tts import PiperTTS
    from bench.voice.common import WIRE_RATE
    from bench.voice.workload import prepare_clips, trim_silence

    rng = random.Random(seed)
    jfk = prepare_clips(["jfk"])["jfk"]
    out = [("jfk", "human", np.frombuffer(jfk.pcm, dtype=np.int16).astype(np.float32) / 32768)]
    piper = PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="piper")
    voices: list[tuple[str, Any]] = [("piper", piper), ("espeak", EspeakTTS("en-us"))]
    sentences = PAUSED_SENTENCES[:3] if quick else PAUSED_SENTENCES
    for kind, tts in voices:
        for i, parts in enumerate(sentences):
            whole = trim_silence(np.asarray(tts.synthesize(" ".join(parts), WIRE_RATE)), WIRE_RATE)
            pieces, at = [], 0
            for j in range(1, len(parts)):
                # Cut the whole sentence where its first j parts end (so the voice keeps
                # the rising, unfinished prosody of a mid-sentence pause: a part spoken on
                # its own sounds finished): the quietest 10 ms within 150 ms of where
                # those parts, said alone, would end.
                head = " ".join(parts[:j])
                guess = trim_silence(np.asarray(tts.synthesize(head, WIRE_RATE)), WIRE_RATE).size
                cut = _quietest(
                    whole, min(guess, whole.size - 1), WIRE_RATE // 100, WIRE_RATE * 15 // 100
                )
                pieces += [
                    whole[at:cut],
                    np.zeros(int(rng.uniform(0.6, 1.5) * WIRE_RATE), np.float32),
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
                    lambda t, e, s=last_sent: e["type"] == "input_audio_buffer.committed" and t > s,
                    start,
                    wait_s,
                )
                ended = True
            except TimeoutError:
                ended = False
            await asyncio.sleep(2.0)  # past the merge window: the next one is a new turn
            events = [e["type"] for _, e in conn.events(start)]
            turns = events.count("input_audio_buffer.committed")
            rows.append(
                {
                    "utterance": name,
                    "kind": kind,
                    "turns": turns,
                    "deleted": events.count("conversation.item.deleted"),
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


class Loudspeaker:
    """The room: each audio delta of the answer being played comes back into `conn`'s
    microphone after `delay_s`, `attenuation_db` quieter (real-time pace, in order)."""

    def __init__(self, conn: Any, attenuation_db: float, delay_s: float = 0.1) -> None:
        self.conn, self.delay_s = conn, delay_s
        self.gain = 10 ** (-attenuation_db / 20)
        self.response: str | None = None
        self.echoes: list[Any] = []
        conn.on_audio = self._heard

    def play(self, response_id: str) -> None:
        """From now on, echo this response's audio (after the delay's silence)."""
        import asyncio

        import numpy as np

        from bench.voice.common import WIRE_RATE

        delay = np.zeros(int(WIRE_RATE * self.delay_s), dtype=np.int16).tobytes()
        self.response = response_id
        self.echoes = [asyncio.create_task(self.conn.say(delay))]

    def _heard(self, response_id: str | None, b64: str) -> None:
        import asyncio
        import base64

        import numpy as np

        if response_id != self.response:
            return
        pcm = np.frombuffer(base64.b64decode(b64), dtype=np.int16).astype(np.float32)
        quiet = (pcm * self.gain).astype(np.int16).tobytes()
        self.echoes.append(asyncio.create_task(self.conn.say(quiet)))

    async def finished(self) -> None:
        """The echo has been heard to its end."""
        import asyncio

        await asyncio.gather(*self.echoes)


async def ask_over_echo(
    conn: Any, speaker: Loudspeaker, question: str, during: Any = None
) -> dict[str, Any]:
    """Ask a typed question and play its spoken answer into the room; `during` (a
    coroutine function of the response id) runs while it plays. Returns the answer's
    status and how many `speech_started` the server sent meanwhile."""
    import asyncio

    start = len(conn.log)
    content = [{"type": "input_text", "text": question}]
    item = {"type": "message", "role": "user", "content": content}
    await conn.send({"type": "conversation.item.create", "item": item})
    await conn.send({"type": "response.create"})
    try:
        _, _, created = await conn.wait_for(lambda t, e: e["type"] == "response.created", start, 60)
        rid = created["response"]["id"]
        speaker.play(rid)
        if during is not None:
            await during(rid)
        _, _, done = await conn.wait_for(
            lambda t, e, r=rid: e["type"] == "response.done" and e["response"]["id"] == r,
            start,
            120,
        )
        status = done["response"]["status"]
    except TimeoutError:
        status = "timeout"
    await speaker.finished()
    await asyncio.sleep(1.0)
    events = [e for _, e in conn.events(start)]
    started = sum(1 for e in events if e["type"] == "input_audio_buffer.speech_started")
    outcome: dict[str, Any] = {"status": status, "speech_started": started}
    if status == "timeout":
        outcome["events"] = [e["type"] for e in events][-20:]
    return outcome


async def _echo(url: str, answers: int, attenuation_db: float) -> dict[str, Any]:
    from bench.voice.connection import Conn

    conn = await Conn.open(url)
    speaker = Loudspeaker(conn, attenuation_db)
    # echo that ends up a turn is counted, not answered (the next question comes next)
    detection = {"type": "server_vad", "create_response": False}
    await conn.send({"type": "session.update", "session": {"turn_detection": detection}})
    try:
        outcomes = [
            await ask_over_echo(conn, speaker, ECHO_QUESTIONS[i % len(ECHO_QUESTIONS)])
            for i in range(answers)
        ]
    finally:
        await conn.close()
    from bench.voice.common import ANSWERED

    false = sum(1 for o in outcomes if o["status"] not in ANSWERED or o["speech_started"])
    return {"answers": len(outcomes), "false_barge_ins": false, "rows": outcomes}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    from bench.voice.common import log as bench_log

    log = functools.partial(bench_log, bench="turns")
    from bench.voice.server import Server

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
            result["echo"][f"minus_{db:.0f}_db"] = asyncio.run(_echo(url, echo_answers, db))
    finally:
        result["server"] = server.stop()
    result["summary"] = {
        "split_share": {m: r["split_share"] for m, r in result["cutoffs"].items()},
        "false_barge_ins": {
            k: f"{r['false_barge_ins']}/{r['answers']}" for k, r in result["echo"].items()
        },
    }
    return result
