"""`bench voice --protocol live`: GPT-Live's WebSocket against the Realtime WebSocket on
the same server and clips, paired: each clip said over one and then the other (the first
alternating round by round), both microphones streaming in real time.

Live has no response events: an answer is the output audio that follows the end of the
speech, and it is over once no audio has come for `ANSWER_GAP_S`. Voice-to-voice is
measured as on the Realtime side (`voice_turn`): the speech's last chunk sent -> the first
audible sample a player would sound (`heard_at`), so the two are the same measure."""

from __future__ import annotations

import argparse
from typing import Any

from bench.kit.log import log
from bench.voice.connection import Conn

LIVE_PATH = "/v1/live/sessions"
ANSWER_GAP_S = 1.5  # no answer audio for this long: the answer is over
V2V_MARGIN_MS = 30.0  # Live's voice-to-voice P50 may exceed the Realtime one's by this (noise)
START = "session.start"  # Live's client events, written here as the client says them
APPEND = "session.input_audio.append"


class LiveConn(Conn):
    """A Live WebSocket that behaves like `Conn`: the same real-time microphone, a log of
    the Live events (audio deltas kept as their size and audible start, as Conn does)."""

    @classmethod
    async def open(cls, url: str) -> LiveConn:
        import asyncio
        import json

        import websockets

        from app.protocol.server_events.live import SessionStarted

        ws = await websockets.connect(url, max_size=None, open_timeout=30)
        conn = cls(ws)
        await ws.send(json.dumps({"type": START, "session": {"model": "gpt-live-1"}}))
        conn._tasks = [asyncio.create_task(conn._receive())]
        _, _, started = await conn.wait_for(lambda t, e: e["type"] == SessionStarted.TYPE, 0, 30)
        conn.session = started["session"]
        conn._tasks.append(asyncio.create_task(conn._microphone()))
        return conn

    def frame(self, pcm: bytes) -> str | bytes:
        import base64
        import json

        return json.dumps({"type": APPEND, "audio": base64.b64encode(pcm).decode()})

    async def _receive(self) -> None:
        import base64
        import json
        import time

        from app.audio import PROTOCOL_RATE
        from app.protocol.server_events.live import OutputAudioDelta
        from bench.voice.common import first_audible_ms
        from bench.voice.connection import DELTA_AUDIBLE_MS, DELTA_MS

        try:
            async for message in self.ws:
                t = time.monotonic()
                event = json.loads(message)
                if event.get("type") == OutputAudioDelta.TYPE:
                    pcm = base64.b64decode(event.get("delta") or "")
                    event["delta"] = len(event.get("delta") or "")
                    event[DELTA_MS] = len(pcm) / 2 / PROTOCOL_RATE * 1000
                    event[DELTA_AUDIBLE_MS] = first_audible_ms(pcm)
                self.log.append((t, event))
                self._new.set()
        finally:
            self.closed = True
            self._new.set()


async def live_turn(conn: LiveConn, pcm: bytes, timeout_s: float) -> dict[str, Any]:
    """Say the speech; the answer: the output audio after its end, until a gap."""
    from app.protocol.server_events.live import (
        InputTranscriptDelta,
        OutputAudioDelta,
        OutputTranscriptDelta,
    )
    from bench.voice.common import ms_between
    from bench.voice.connection import heard_at

    start = len(conn.log)
    _, last_sent = await conn.say(pcm)
    turn: dict[str, Any] = {"speech_end": last_sent, "status": "completed"}
    try:
        i, first, _ = await conn.wait_for(
            lambda t, e: e["type"] == OutputAudioDelta.TYPE and t > last_sent, start, timeout_s
        )
    except TimeoutError:
        return {**turn, "status": "timeout", "voice_to_voice_audible_ms": None}
    while True:
        try:
            i, _, _ = await conn.wait_for(
                lambda t, e: e["type"] == OutputAudioDelta.TYPE, i + 1, ANSWER_GAP_S
            )
        except TimeoutError:
            break
    events = conn.events(start, i + 1)
    deltas = [(t, e) for t, e in events if e["type"] == OutputAudioDelta.TYPE and t >= first]

    def words(kind: str) -> str:
        return "".join(e["delta"] for _, e in events if e["type"] == kind)

    return {
        **turn,
        "voice_to_voice_ms": ms_between(first, last_sent),
        "voice_to_voice_audible_ms": ms_between(heard_at(deltas), last_sent),
        "transcript": words(InputTranscriptDelta.TYPE),
        "answer": words(OutputTranscriptDelta.TYPE),
    }


async def run_pairs(server: Any, clips: list[Any], rounds: int, turn_timeout: float) -> dict:
    import asyncio

    from bench.voice.client import open_connection, pause_after, voice_turn
    from bench.voice.runner import transport_url
    from bench.voice.stats import median_interval, summarize

    merge_s = 1.5
    realtime = await open_connection(transport_url(server, "websocket"))
    live = await LiveConn.open(f"ws://127.0.0.1:{server.port}{LIVE_PATH}")
    pairs = []
    try:
        await asyncio.sleep(0.5)  # the microphones are on before anyone speaks
        for r in range(rounds):
            order = ["realtime", "live"] if r % 2 == 0 else ["live", "realtime"]
            for clip in clips:
                pair: dict[str, Any] = {"clip": clip.name}
                for protocol in order:
                    if protocol == "realtime":
                        turn = await voice_turn(realtime, clip, turn_timeout)
                    else:
                        turn = await live_turn(live, clip.pcm, turn_timeout)
                    pair[protocol] = {
                        k: turn.get(k)
                        for k in ("status", "voice_to_voice_audible_ms", "voice_to_voice_ms")
                    }
                    await pause_after(turn["speech_end"], merge_s)
                pairs.append(pair)
                log(f"  {clip.name}: realtime {pair['realtime']} | live {pair['live']}")
    finally:
        await live.close()
        await realtime.close()
    key = "voice_to_voice_audible_ms"
    v2v = {p: summarize(pair[p][key] for pair in pairs) for p in ("realtime", "live")}
    diffs = [
        pair["live"][key] - pair["realtime"][key]
        for pair in pairs
        if pair["live"][key] is not None and pair["realtime"][key] is not None
    ]
    gap = summarize(diffs) | {"p50_ci90": median_interval(diffs)}
    return {
        key: v2v,
        "live_minus_realtime_ms": gap,
        "target_ms": V2V_MARGIN_MS,
        "target_met": None if gap["p50"] is None else gap["p50"] <= V2V_MARGIN_MS,
        "pairs": pairs,
    }


def run_live(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import os

    from bench.kit.machine import describe
    from bench.kit.server import Server
    from bench.voice.workload import HUMAN_CLIPS, prepare_clips

    quick = bool(getattr(args, "quick", False))
    human = ["jfk"] if quick else list(HUMAN_CLIPS)
    prepared = prepare_clips(human)
    clips = [c for c in prepared.values() if c.name != "interruption"]
    said = clips[: len(human) + 3] if quick else clips
    result: dict[str, Any] = {"benchmark": "voice", "protocol": "live", "quick": quick}
    result["machine"] = describe()
    result["load_before"] = os.getloadavg()
    server = Server(args)
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        rounds = max(getattr(args, "paired", 0) or (1 if quick else 3), 1)
        log(f"{rounds} round(s) of {len(said)} clips, Realtime and Live WebSockets in turn")
        result.update(asyncio.run(run_pairs(server, said, rounds, args.turn_timeout)))
    finally:
        result["server"] = server.stop()
    result["load_after"] = os.getloadavg()
    gap = result.get("live_minus_realtime_ms", {})
    v2v = result.get("voice_to_voice_audible_ms", {})
    log(
        f"voice-to-voice P50/P95: realtime {v2v.get('realtime', {}).get('p50')}/"
        f"{v2v.get('realtime', {}).get('p95')} ms, live {v2v.get('live', {}).get('p50')}/"
        f"{v2v.get('live', {}).get('p95')} ms; live - realtime P50 {gap.get('p50')} ms "
        f"(90% interval {gap.get('p50_ci90')}; target {V2V_MARGIN_MS:g})"
    )
    return result
