"""`bench voice --transport twilio`: phone calls against the WebSocket on the same clips.

What the line costs the ear: the English clips (the human recordings and Piper's
questions) transcribed by the server's ASR model as they are (24 kHz, resampled to the
pipeline's 16 kHz), after a G.711 mu-law 8 kHz round trip (what a phone line carries),
and through the same line with hiss 20 dB under the speech; the word error rate of each.

What it costs the answer: a Realtime WebSocket session and a Twilio media stream
(bench/voice/twilio_caller.py) open side by side on one server; each clip is said over
one and then the other (the first alternating round by round), and voice-to-voice is
the speech's last frame sent -> the answer's first audible sample played (the WebSocket:
its deltas played back to back; the call: its media frames as Twilio plays them). The
P50 of the pairs' differences is judged against the issue's 60 ms.

Barge-in on the call: a question whose answer runs long, and once a second of it has
come, the interruption said over it: its first frame sent -> the `clear` arriving (what
Twilio held is dropped then), and the answer's frames that came in between.

Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.kit.log import log

V2V_P50_MARGIN_MS = 60.0  # the target: the call within this of the WebSocket
BARGE_IN_STOP_MS = 150.0  # speech over an answer -> its audio stopped on the caller's side
LONG_QUESTION = "Tell me a long story about a dragon and a knight."
STREAM_PATH = "/v1/telephony/twilio/stream"
LINE_SNR_DB = 20.0  # a noisy line's hiss under the speech (a mobile call on the move)


def _ulaw(pcm16_24k: bytes) -> bytes:
    from app.audio import PROTOCOL_RATE, encode_audio, pcm16_to_float, resample

    return encode_audio(resample(pcm16_to_float(pcm16_24k), PROTOCOL_RATE, 8000), "audio/pcmu")


def _with_noise(samples: Any, snr_db: float = LINE_SNR_DB) -> Any:
    """`samples` with white noise `snr_db` under their speech's power (a seeded hiss)."""
    import numpy as np

    speech = samples[np.abs(samples) > 1e-3]
    power = float(np.mean(speech**2)) if speech.size else 1e-6
    noise = np.random.default_rng(0).normal(0.0, np.sqrt(power / 10 ** (snr_db / 10)), samples.size)
    return (samples + noise).astype(np.float32)


def line_wer(clips: list[Any], asr_model: str) -> dict[str, Any]:
    """Each clip transcribed as it is and after a mu-law 8 kHz round trip."""
    import numpy as np

    from app.audio import (
        PIPELINE_RATE,
        PROTOCOL_RATE,
        decode_audio,
        float_to_pcm16,
        pcm16_to_float,
        resample,
    )
    from app.speech.asr import WhisperASR
    from bench.asr.passes import locate
    from bench.voice.stats import word_errors

    asr = WhisperASR(locate(asr_model), name=asr_model)
    tail = np.zeros(PIPELINE_RATE // 5, np.float32)
    totals = {"wideband": [0, 0], "line": [0, 0], "noisy_line": [0, 0]}
    rows = []
    for clip in clips:
        wide = pcm16_to_float(clip.pcm)
        line = decode_audio(_ulaw(clip.pcm), "audio/pcmu")
        noisy = decode_audio(_ulaw(float_to_pcm16(_with_noise(wide))), "audio/pcmu")
        heard = {
            "wideband": resample(wide, PROTOCOL_RATE, PIPELINE_RATE),
            "line": resample(line, 8000, PIPELINE_RATE),
            "noisy_line": resample(noisy, 8000, PIPELINE_RATE),
        }
        row: dict[str, Any] = {"clip": clip.name, "reference": clip.text}
        for path, audio in heard.items():
            text = asr.transcribe(np.concatenate([audio, tail]).astype(np.float32)).text
            errors, words = word_errors(clip.text, text)
            totals[path][0] += errors
            totals[path][1] += words
            row[path] = {"heard": text, "wer": round(errors / max(words, 1), 4)}
        rows.append(row)
        log(f"  {clip.name}: {row['wideband']['heard']!r} | line: {row['line']['heard']!r}")
        log(f"    noisy line: {row['noisy_line']['heard']!r}")
    wer = {path: round(e / max(w, 1), 4) for path, (e, w) in totals.items()}
    return {
        "asr_model": asr_model,
        "wer": wer,
        "line_minus_wideband": round(wer["line"] - wer["wideband"], 4),
        "clips": rows,
    }


async def phone_turn(caller: Any, ulaw: bytes, timeout_s: float) -> dict[str, Any]:
    """Say `ulaw` on the call; the answer's first frame arriving, and the first audible
    sample of the answer to all of it played. That answer is the one whose mark comes after the speech's end; its frames follow the
    mark or clear before it (an answer to part of the speech, cut by the rest, ends so)."""
    start = len(caller.log)
    _, last = await caller.say(ulaw)
    turn: dict[str, Any] = {"speech_end": last}
    try:
        i_mark, _, _ = await caller.wait_for(
            lambda m: m["event"] == "mark" and m["_at"] > last, start, timeout_s
        )
    except TimeoutError:
        return turn | {"status": "timeout"}
    log_ = caller.log
    begin = max(
        [start] + [i for i in range(start, i_mark) if log_[i][1]["event"] in ("mark", "clear")]
    )
    media = [(t, m) for t, m in log_[begin:i_mark] if m["event"] == "media"]
    if media:  # as a WebSocket client's first delta: the answer's first frame arriving
        turn["voice_to_voice_ms"] = round((media[0][0] - last) * 1000, 1)
    first = next((m for _, m in media if m["media"]["audible"]), None)
    if first is not None:
        turn["voice_to_voice_audible_ms"] = round((first["media"]["plays_at"] - last) * 1000, 1)
    return turn | {"status": "completed" if first is not None else "silent"}


async def barge_in(caller: Any, question: bytes, interruption: bytes, timeout_s: float) -> dict:
    import asyncio
    import time

    start = len(caller.log)
    await caller.say(question)
    trial: dict[str, Any] = {"measured": False}
    try:
        i, _, _ = await caller.wait_for(
            lambda m: m["event"] == "media" and m["media"]["audible"], start, timeout_s
        )
        for _ in range(50):  # a second of the answer
            i, _, _ = await caller.wait_for(lambda m: m["event"] == "media", i + 1, timeout_s)
        talking_from = len(caller.log)
        said = asyncio.ensure_future(caller.say(interruption))
        spoke_at = time.monotonic()
        j, cleared_at, _ = await caller.wait_for(
            lambda m: m["event"] == "clear", talking_from, timeout_s
        )
        between = caller.log[talking_from:j]
        trial.update(
            measured=True,
            speech_to_clear_ms=round((cleared_at - spoke_at) * 1000, 1),
            frames_before_clear=sum(1 for _, m in between if m["event"] == "media"),
        )
        await said
        await caller.wait_for(lambda m: m["event"] == "mark", j, timeout_s)
    except TimeoutError:
        trial["problem"] = "no answer, or no clear, in time"
    return trial


async def run_calls(server: Any, clips: list[Any], rounds: int, args: Any) -> dict[str, Any]:
    import asyncio

    from bench.voice.client import open_connection, pause_after, voice_turn
    from bench.voice.runner import transport_url
    from bench.voice.stats import paired_gap, summarize
    from bench.voice.twilio_caller import TwilioCaller
    from bench.voice.workload import Clip

    timeout_s, merge_s = args.turn_timeout, 1.5
    ws = await open_connection(transport_url(server, "websocket"))
    caller = await TwilioCaller.open(f"ws://127.0.0.1:{server.port}{STREAM_PATH}")
    pairs = []
    try:
        await asyncio.sleep(0.5)
        for r in range(rounds):
            order = ["websocket", "twilio"] if r % 2 == 0 else ["twilio", "websocket"]
            for clip in clips:
                pair: dict[str, Any] = {"clip": clip.name}
                for transport in order:
                    if transport == "websocket":
                        turn = await voice_turn(ws, clip, timeout_s)
                    else:
                        turn = await phone_turn(caller, _ulaw(clip.pcm), timeout_s)
                    pair[transport] = {
                        k: turn.get(k) for k in ("status", "voice_to_voice_audible_ms")
                    }
                    await pause_after(turn["speech_end"], merge_s)
                pairs.append(pair)
                log(f"  {clip.name}: ws {pair['websocket']} | twilio {pair['twilio']}")
        tts = _piper()
        question = _ulaw(Clip("long", "tts", LONG_QUESTION, tts(LONG_QUESTION)).pcm)
        interruption = _ulaw(next(c for c in clips if c.name == "q1").pcm)
        trials = []
        for _ in range(args.barge_in if args.barge_in is not None else 2):
            trials.append(await barge_in(caller, question, interruption, timeout_s))
            await asyncio.sleep(merge_s + 0.5)
            log(f"  barge-in: {trials[-1]}")
    finally:
        await caller.hang_up()
        await ws.close()
    v2v, gap = paired_gap(pairs, "twilio")
    stop = summarize(t.get("speech_to_clear_ms") for t in trials)
    return {
        "voice_to_voice_audible_ms": v2v,
        "twilio_minus_websocket_ms": gap,
        "target_ms": V2V_P50_MARGIN_MS,
        "target_met": None if gap["p50"] is None else gap["p50"] <= V2V_P50_MARGIN_MS,
        "barge_in": {
            "speech_to_clear_ms": stop,
            "frames_before_clear": summarize(t.get("frames_before_clear") for t in trials),
            "target_ms": BARGE_IN_STOP_MS,
        },
        "pairs": pairs,
        "trials": trials,
    }


def _piper() -> Any:
    import numpy as np

    from app.audio import PROTOCOL_RATE
    from app.catalog import registry as model_registry
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import TTS_VOICE, trim_silence

    tts = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    return lambda text: trim_silence(
        np.asarray(tts.synthesize(text, PROTOCOL_RATE), np.float32), PROTOCOL_RATE
    )


def run_twilio(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import os

    from bench.kit.server import Server
    from bench.voice.common import paired_clips

    clips, said, rounds, result = paired_clips(args, "twilio")
    asr_model = os.environ.get("R1VOICE_ASR_MODEL", "whisper-tiny.en")
    log(f"line: {len(clips)} clips through {asr_model}, as they are and through mu-law 8 kHz")
    result["line"] = line_wer(clips, asr_model)
    log(f"  WER {result['line']['wer']}")
    server = Server(args)
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        log(f"calls: {rounds} round(s) of {len(said)} clips, WebSocket and Twilio in turn")
        result.update(asyncio.run(run_calls(server, said, rounds, args)))
    finally:
        result["server"] = server.stop()
    result["load_after"] = os.getloadavg()
    gap = result.get("twilio_minus_websocket_ms", {})
    log(
        f"twilio - websocket voice-to-voice P50 {gap.get('p50')} ms (90% interval "
        f"{gap.get('p50_ci90')}; target {V2V_P50_MARGIN_MS:g}); barge-in speech -> clear "
        f"P50 {result.get('barge_in', {}).get('speech_to_clear_ms', {}).get('p50')} ms"
    )
    return result
