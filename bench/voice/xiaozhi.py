"""`bench voice --transport xiaozhi`: an emulated xiaozhi board against the WebSocket on
the same clips.

A Realtime WebSocket session and a board (bench/voice/xiaozhi_board.py: 16 kHz Opus in
60 ms frames, its microphone always on as in `realtime` listening) open side by side on
one server, both on the server's own models (the device pipeline's defaults are turned
off so only the transport differs); each clip is said over one and then the other (the
first alternating round by round). Voice-to-voice is the speech's last frame sent -> the
answer's first audible sample played (the WebSocket: its deltas played back to back;
the board: its Opus frames decoded and played back to back). The P50 of the pairs'
differences is judged against the issue's 60 ms. What framing alone costs is reported
beside it: the end of speech reaches the server up to one 60 ms frame later than in the
WebSocket's 20 ms appends, and the first answer frame waits for 60 ms of audio.

Barge-in on the board: a question whose answer runs long, and once a second of it has
come, the interruption said over it: its first frame sent -> `tts stop` arriving, the
answer's last frame arriving, the frames that came in between, how much audio the
board still held unplayed when the stop came, and their sum: when the board's sound
stops (in realtime listening the firmware plays out what it holds after `tts stop`).

Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.kit.log import log

V2V_P50_MARGIN_MS = 60.0  # the target: the board within this of the WebSocket
BARGE_IN_STOP_MS = 150.0  # speech over an answer -> its audio stopped on the board's side
LONG_QUESTION = "Tell me a long story about a dragon and a knight."
FRAMING_MS = {"input_frame": 60, "websocket_append": 20, "output_frame": 60}
DEVICE_PIPELINE_OFF = {
    "R1VOICE_XIAOZHI_LLM_MODEL": "",
    "R1VOICE_XIAOZHI_ASR_MODEL": "",
    "R1VOICE_XIAOZHI_VOICE": "",
}


def _board_samples(pcm16_24k: bytes) -> Any:
    from app.audio import PROTOCOL_RATE, pcm16_to_float, resample
    from bench.voice.xiaozhi_board import RATE

    return resample(pcm16_to_float(pcm16_24k), PROTOCOL_RATE, RATE)


def heard_at(board: Any, first: int) -> float | None:
    """When the board would sound the first audible sample of the answer whose first
    frame is `first`: frames played back to back from the first's arrival."""
    from bench.voice.common import first_audible_ms

    arrivals = {entry: t for t, entry in board.log if isinstance(entry, int)}
    offset = int(sum(board.frame_ms[:first]) * 48)
    plays_at: float | None = None
    for index in range(first, board.frames):
        start = arrivals[index] if plays_at is None else max(arrivals[index], plays_at)
        size = int(board.frame_ms[index] * 48)
        audible = first_audible_ms(bytes(board.pcm[offset : offset + size]))
        if audible is not None:
            return start + audible / 1000
        plays_at, offset = start + board.frame_ms[index] / 1000, offset + size
    return None


async def _after(board: Any, start: int, match: Any, within_s: float) -> tuple[int, float, Any]:
    """The first log entry from `start` that `match`es: (index, arrival, entry)."""
    import asyncio

    async def find() -> tuple[int, float, Any]:
        index = start
        while True:
            while index < len(board.log):
                t, entry = board.log[index]
                if match(t, entry):
                    return index, t, entry
                index += 1
            board._changed.clear()
            await board._changed.wait()

    return await asyncio.wait_for(find(), within_s)


def _tts(state: str, after: float = 0.0) -> Any:
    """A match for the board's `tts` message of `state` arriving after `after`."""
    return lambda t, e: (
        t > after and isinstance(e, dict) and e.get("type") == "tts" and e.get("state") == state
    )


def _frame(t: float, entry: Any) -> bool:
    return isinstance(entry, int)


async def board_turn(board: Any, pcm: bytes, timeout_s: float) -> dict[str, Any]:
    """Say `pcm` on the board; the answer's first audible sample played, and its end."""
    start = len(board.log)
    last = await board.say(_board_samples(pcm))
    turn: dict[str, Any] = {"speech_end": last}
    try:
        # the answer to the whole utterance starts after its end (one to a part of it,
        # before a pause, started earlier and was cut)
        i, _, _ = await _after(board, start, _tts("start", last), timeout_s)
        _, _, first = await _after(board, i, _frame, timeout_s)
        await _after(board, i, _tts("stop"), timeout_s)
        heard = heard_at(board, first)
        turn["voice_to_voice_audible_ms"] = (
            None if heard is None else round((heard - last) * 1000, 1)
        )
        turn["status"] = "completed"
    except TimeoutError:
        turn["status"] = "timeout"
    return turn


async def barge_in(board: Any, question: bytes, interruption: bytes, timeout_s: float) -> dict:
    import asyncio
    import time

    start = len(board.log)
    await board.say(_board_samples(question))
    trial: dict[str, Any] = {"measured": False}
    try:
        i, _, _ = await _after(board, start, _tts("start"), timeout_s)
        _, first_at, first = await _after(board, i, _frame, timeout_s)
        await board.wait_frames(first + 17, timeout_s)  # a second of the answer
        talking_from = len(board.log)
        said = asyncio.ensure_future(board.say(_board_samples(interruption)))
        spoke_at = time.monotonic()
        j, stop_at, _ = await _after(board, talking_from, _tts("stop"), timeout_s)
        frames = [t for t, e in board.log if isinstance(e, int) and e >= first]
        received_ms = sum(board.frame_ms[first:])
        unplayed_ms = max(0.0, received_ms - (stop_at - first_at) * 1000)
        trial.update(
            measured=True,
            speech_to_tts_stop_ms=round((stop_at - spoke_at) * 1000, 1),
            speech_to_last_frame_ms=round((max(frames) - spoke_at) * 1000, 1),
            frames_after_speech=sum(1 for t in frames if t > spoke_at),
            unplayed_at_stop_ms=round(unplayed_ms, 1),
            # the board's sound stops then: in realtime listening the firmware plays out
            # what it holds after `tts stop` (the target counts it)
            speech_to_audio_stopped_ms=round((stop_at - spoke_at) * 1000 + unplayed_ms, 1),
        )
        await said
        await _after(board, j + 1, _tts("stop"), timeout_s)  # the interruption's answer
    except TimeoutError:
        trial["problem"] = "no answer, or no tts stop, in time"
    return trial


def _piper(text: str) -> Any:
    """`text` said by the bench's Piper voice, its silences trimmed (float, 24 kHz)."""
    import numpy as np

    from app.audio import PROTOCOL_RATE
    from app.catalog import registry as model_registry
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import TTS_VOICE, trim_silence

    tts = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    return trim_silence(np.asarray(tts.synthesize(text, PROTOCOL_RATE), np.float32), PROTOCOL_RATE)


async def run_boards(server: Any, clips: list[Any], rounds: int, args: Any) -> dict[str, Any]:
    import asyncio

    from bench.voice.client import open_connection, pause_after, voice_turn
    from bench.voice.runner import transport_url
    from bench.voice.stats import paired_gap, summarize
    from bench.voice.workload import Clip
    from bench.voice.xiaozhi_board import Board

    timeout_s, merge_s = args.turn_timeout, 1.5
    ws = await open_connection(transport_url(server, "websocket"))
    board = Board(f"127.0.0.1:{server.port}", version=3)
    await board.connect()
    await board.send({"type": "listen", "state": "start", "mode": "realtime"})
    board.microphone_on()
    pairs = []
    try:
        await asyncio.sleep(0.5)
        for r in range(rounds):
            order = ["websocket", "xiaozhi"] if r % 2 == 0 else ["xiaozhi", "websocket"]
            for clip in clips:
                pair: dict[str, Any] = {"clip": clip.name}
                for transport in order:
                    if transport == "websocket":
                        turn = await voice_turn(ws, clip, timeout_s)
                    else:
                        turn = await board_turn(board, clip.pcm, timeout_s)
                    pair[transport] = {
                        k: turn.get(k) for k in ("status", "voice_to_voice_audible_ms")
                    }
                    await pause_after(turn["speech_end"], merge_s)
                pairs.append(pair)
                log(f"  {clip.name}: ws {pair['websocket']} | xiaozhi {pair['xiaozhi']}")
        question = Clip("long", "tts", LONG_QUESTION, _piper(LONG_QUESTION)).pcm
        interruption = next(c for c in clips if c.name == "q1").pcm
        trials = []
        for _ in range(args.barge_in if args.barge_in is not None else 2):
            trials.append(await barge_in(board, question, interruption, timeout_s))
            await asyncio.sleep(merge_s + 0.5)
            log(f"  barge-in: {trials[-1]}")
    finally:
        await board.close()
        await ws.close()
    v2v, gap = paired_gap(pairs, "xiaozhi")
    measured = [t for t in trials if t["measured"]]
    return {
        "voice_to_voice_audible_ms": v2v,
        "xiaozhi_minus_websocket_ms": gap,
        "framing_ms": FRAMING_MS,
        "target_ms": V2V_P50_MARGIN_MS,
        "target_met": None if gap["p50"] is None else gap["p50"] <= V2V_P50_MARGIN_MS,
        "barge_in": {
            key: summarize(t.get(key) for t in measured)
            for key in (
                "speech_to_tts_stop_ms",
                "speech_to_last_frame_ms",
                "frames_after_speech",
                "unplayed_at_stop_ms",
                "speech_to_audio_stopped_ms",
            )
        }
        | {"target_ms": BARGE_IN_STOP_MS, "trials": len(trials), "measured": len(measured)},
        "pairs": pairs,
        "trials": trials,
    }


def run_xiaozhi(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import os

    from bench.kit.server import Server
    from bench.voice.common import paired_clips

    _clips, said, rounds, result = paired_clips(args, "xiaozhi")
    server = Server(args)
    server.env.update(DEVICE_PIPELINE_OFF)  # both sessions on the server's own models
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        log(f"boards: {rounds} round(s) of {len(said)} clips, WebSocket and xiaozhi in turn")
        result.update(asyncio.run(run_boards(server, said, rounds, args)))
    finally:
        result["server"] = server.stop()
    result["load_after"] = os.getloadavg()
    gap = result.get("xiaozhi_minus_websocket_ms", {})
    stop = result.get("barge_in", {}).get("speech_to_audio_stopped_ms", {})
    log(
        f"xiaozhi - websocket voice-to-voice P50 {gap.get('p50')} ms (90% interval "
        f"{gap.get('p50_ci90')}; target {V2V_P50_MARGIN_MS:g}); barge-in speech -> the "
        f"board's sound stopped P50 {stop.get('p50')} ms (target {BARGE_IN_STOP_MS:g})"
    )
    return result
