"""Whisper's encoder window: WER and time of a pass over a fitted window against 30 s.

faster-whisper pads every clip to Whisper's 30 s window; r1voice encodes a clip under
30 s over its length + 2 s (at least `--min-window` seconds, app/models/asr.py). This
transcribes the same clips, one pass each, with each window setting, interleaved clip by
clip (the machine is shared): the human recordings of bench voice (jfk, the MIT
licence), Piper's questions and sentences, and espeak-ng's, each followed by the
silences a final pass hears (`--tails`). Greedy decoding, no timestamps, as the server.

Counts and times are reported, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

PIPELINE_RATE = 16_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="whisper-tiny.en", help="a bundled Whisper model")
    parser.add_argument(
        "--min-window", default="30,12", help="shortest encoder windows to compare, seconds"
    )
    parser.add_argument("--tails", default="0.1,0.2,0.4", help="silence after each clip, s")


def _clips(quick: bool) -> list[tuple[str, str, Any]]:
    """(name, what was said, float32 samples at 16 kHz)."""
    import numpy as np

    from app.audio import resample
    from app.models import registry as model_registry
    from app.models.espeak_tts import EspeakTTS
    from app.models.piper_tts import PiperTTS
    from bench.turns import ECHO_QUESTIONS, PAUSED_SENTENCES
    from bench.voice.common import WIRE_RATE
    from bench.voice.workload import INTERRUPTION, QUESTIONS, prepare_clips, trim_silence

    clips = []
    for clip in prepare_clips(["jfk", "mit-licence-en"]).values():
        if clip.kind == "human":
            samples = np.frombuffer(clip.pcm, dtype=np.int16).astype(np.float32) / 32768
            clips.append((clip.name, clip.text, resample(samples, WIRE_RATE, PIPELINE_RATE)))
    sentences = [" ".join(parts) for parts in PAUSED_SENTENCES]
    voices: list[tuple[str, Any, list[str]]] = [
        (
            "piper",
            PiperTTS(model_registry.locate("piper-en_US-joe-medium", "tts"), name="piper"),
            [*QUESTIONS, INTERRUPTION, *sentences, *ECHO_QUESTIONS],
        ),
        ("espeak", EspeakTTS("en-us"), [*sentences, *QUESTIONS]),
    ]
    for kind, tts, texts in voices:
        for i, text in enumerate(texts[:4] if quick else texts):
            samples = np.asarray(tts.synthesize(text, PIPELINE_RATE), dtype=np.float32)
            clips.append((f"{kind}-{i + 1}", text, trim_silence(samples, PIPELINE_RATE)))
    return clips


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from app.models import registry as model_registry
    from app.models.asr import WhisperASR
    from bench.voice.common import log as bench_log

    log = functools.partial(bench_log, bench="asr")
    from bench.voice.stats import word_errors

    quick = bool(getattr(args, "quick", False))
    windows = [float(w) for w in args.min_window.split(",") if w]
    tails = [float(t) for t in args.tails.split(",") if t][: 1 if quick else None]
    location = model_registry.locate(args.model, "asr")  # an unknown model: refused first
    clips = _clips(quick)
    models = {w: WhisperASR(location, name=args.model, min_window_s=w) for w in windows}
    totals: dict[float, dict[str, Any]] = {
        w: {"errors": 0, "words": 0, "seconds": 0.0, "worst": []} for w in windows
    }
    log(f"asr windows {windows}: {len(clips)} clips x {len(tails)} pauses, {args.model}")
    for tail in tails:
        silence = np.zeros(int(tail * PIPELINE_RATE), np.float32)
        for name, said, samples in clips:
            audio = np.concatenate([samples, silence])
            for window, asr in models.items():
                start = time.perf_counter()
                heard = asr.transcribe(audio).text
                totals[window]["seconds"] += time.perf_counter() - start
                errors, words = word_errors(said, heard)
                totals[window]["errors"] += errors
                totals[window]["words"] += words
                if errors / max(words, 1) > 0.3:
                    totals[window]["worst"].append({"clip": name, "pause_s": tail, "heard": heard})
    passes = len(clips) * len(tails)
    rows = {
        f"min_window_{w:g}s": {
            "wer": round(t["errors"] / max(t["words"], 1), 4),
            "ms_per_pass": round(t["seconds"] / passes * 1000, 1),
            "passes": passes,
            "clips_over_30pct_wer": t["worst"],
        }
        for w, t in totals.items()
    }
    for name, row in rows.items():
        log(f"  {name}: WER {row['wer']:.2%}, {row['ms_per_pass']:.0f} ms a pass")
    return {"benchmark": "asr", "quick": quick, "model": args.model, "windows": rows}
