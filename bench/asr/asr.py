"""Whisper's encoder window: WER and time of a pass over a fitted window against 30 s.

faster-whisper pads every clip to Whisper's 30 s window; r1voice encodes a clip under
30 s over its length + 2 s (at least `--min-window` seconds, app/speech/asr.py). This
transcribes the same clips, one pass each, with each window setting, interleaved clip by
clip (the machine is shared): the human recordings of bench voice (jfk, the MIT
licence), Piper's questions and sentences, and espeak-ng's, each followed by the
silences a final pass hears (`--tails`). Greedy decoding, no timestamps, as the server.

`--language zh`: Mandarin instead. The human recordings of ../shared/data/speech/zh and
Mandarin questions spoken by espeak-ng (`cmn`), each after each of `--leads` seconds of
silence, are transcribed by the server's pass (fitted window, its final beam:
R1VOICE_ASR_FINAL_BEAM, the language given or detected, simplified characters) and by
faster-whisper alone as its users run it (full window, beam 5), interleaved; the
character error rate (CER: punctuation dropped, numbers read out) and the time of a
pass are reported for each, per clip. `--model` may be a model directory of your own.

`--long`: turns over Whisper's 30 s window, English and Mandarin (bench/asr/long.py).

Counts and times are reported, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

from bench.asr.passes import alone, locate

PIPELINE_RATE = 16_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="whisper-tiny.en", help="a bundled Whisper model")
    parser.add_argument(
        "--min-window", default="30,12", help="shortest encoder windows to compare, seconds"
    )
    parser.add_argument("--tails", default="0.1,0.2,0.4", help="silence after each clip, s")
    parser.add_argument(
        "--language",
        default=None,
        help="zh: Mandarin clips, CER of the server's pass against faster-whisper alone",
    )
    parser.add_argument(
        "--long",
        action="store_true",
        help="turns over 30 s (English, Mandarin): the server's final pass against "
        "faster-whisper alone (with --language: that language only)",
    )
    parser.add_argument(
        "--detect", action="store_true", help="with --language: let Whisper detect it"
    )
    parser.add_argument(
        "--leads",
        default="0.1,0.3,0.5",
        help="with --language: silence before each clip, s; each clip is heard after each "
        "(3 clips alone are too few: a character's error flips with 100 ms of lead)",
    )


def _clips(quick: bool) -> list[tuple[str, str, Any]]:
    """(name, what was said, float32 samples at 16 kHz)."""
    import numpy as np

    from app.audio import PROTOCOL_RATE, resample
    from app.catalog import registry as model_registry
    from app.speech.espeak_tts import EspeakTTS
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import (
        ECHO_QUESTIONS,
        INTERRUPTION,
        PAUSED_SENTENCES,
        QUESTIONS,
        prepare_clips,
        trim_silence,
    )

    clips = []
    for clip in prepare_clips(["jfk", "mit-licence-en"]).values():
        if clip.kind == "human":
            samples = np.frombuffer(clip.pcm, dtype=np.int16).astype(np.float32) / 32768
            clips.append((clip.name, clip.text, resample(samples, PROTOCOL_RATE, PIPELINE_RATE)))
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


def _zh_clips(quick: bool) -> list[tuple[str, str, Any]]:
    import re

    import numpy as np
    import soundfile as sf

    from app.audio import resample
    from app.speech.espeak_tts import EspeakTTS
    from bench.voice.workload import QUESTIONS_ZH, speech_dir, trim_silence

    folder = speech_dir() / "zh"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    clips = []
    for name, text in re.findall(r"^\| `([^`]+\.wav)` \| ([^|]+?) \|", readme, re.M):
        data, rate = sf.read(str(folder / name), dtype="float32", always_2d=True)
        clips.append((name.removesuffix(".wav"), text, resample(data.mean(axis=1), rate, 16_000)))
    if not clips:
        raise SystemExit(f"no Mandarin recordings listed in {folder / 'README.md'}")
    tts = EspeakTTS("cmn")
    for i, text in enumerate(QUESTIONS_ZH[:2] if quick else QUESTIONS_ZH):
        samples = np.asarray(tts.synthesize(text, PIPELINE_RATE), dtype=np.float32)
        clips.append((f"espeak-cmn-{i + 1}", text, trim_silence(samples, PIPELINE_RATE)))
    return clips


def run_language(args: argparse.Namespace) -> dict[str, Any]:
    """Mandarin (or another language with clips): the server's pass against
    faster-whisper alone, clip by clip."""
    from pathlib import Path

    import numpy as np

    from app.speech.asr import WhisperASR
    from bench.kit.log import log as bench_log
    from bench.voice.stats import word_errors

    log = functools.partial(bench_log, bench="asr")
    if args.language != "zh":
        raise SystemExit(f"--language {args.language}: only zh has clips here")
    quick = bool(getattr(args, "quick", False))
    model = "whisper-base" if args.model == "whisper-tiny.en" else args.model
    location = locate(model)
    name = Path(model).name
    from app.settings import Settings

    server = WhisperASR(location, name=name, final_beam=Settings.from_env().asr_final_beam)
    if server.english_only:
        raise SystemExit(f"{name} transcribes only English: choose a multilingual model")
    language = None if args.detect else args.language
    leads = [float(x) for x in args.leads.split(",") if x][: 1 if quick else None]
    clips = [
        (f"{clip}@{lead:g}s", said, np.concatenate([np.zeros(int(lead * PIPELINE_RATE)), samples]))
        for clip, said, samples in _zh_clips(quick)
        for lead in leads
    ]
    log(
        f"asr {args.language}: {len(clips)} clips ({len(leads)} leads each), {name}, "
        f"language {language or 'detected'}, final beam {server.final_beam}"
    )
    paths: dict[str, Any] = {
        "server": lambda audio: server.transcribe(audio, language=language),
        "faster_whisper_beam5": lambda audio: alone(server.model, audio, language),
    }
    totals = {k: {"errors": 0, "chars": 0, "seconds": 0.0} for k in paths}
    per_clip = []
    silence = np.zeros(int(0.2 * PIPELINE_RATE), np.float32)
    for clip, said, samples in clips:
        audio = np.concatenate([samples, silence]).astype(np.float32)
        row: dict[str, Any] = {"clip": clip, "reference": said}
        for path, transcribe in paths.items():
            start = time.perf_counter()
            heard = transcribe(audio)
            seconds = time.perf_counter() - start
            errors, chars = word_errors(said, heard.text)
            totals[path]["errors"] += errors
            totals[path]["chars"] += chars
            totals[path]["seconds"] += seconds
            row[path] = {
                "heard": heard.text,
                "language": heard.language,
                "cer": round(errors / max(chars, 1), 4),
                "errors": errors,
                "chars": chars,
                "ms": round(seconds * 1000, 1),
            }
        per_clip.append(row)
        log(f"  {clip}: {row['server']['heard']} | {row['faster_whisper_beam5']['heard']}")
    rows = {
        path: {
            "cer": round(t["errors"] / max(t["chars"], 1), 4),
            "ms_per_pass": round(t["seconds"] / len(clips) * 1000, 1),
        }
        for path, t in totals.items()
    }
    human = [r for r in per_clip if not r["clip"].startswith("espeak")]
    for path in paths:
        errors = sum(r[path]["errors"] for r in human)
        rows[path]["cer_human"] = round(errors / max(sum(r[path]["chars"] for r in human), 1), 4)
    for path, row in rows.items():
        log(
            f"  {path}: CER {row['cer']:.2%} (human {row['cer_human']:.2%}), {row['ms_per_pass']:.0f} ms a pass"
        )
    return {
        "benchmark": "asr",
        "quick": quick,
        "model": name,
        "language": args.language,
        "language_given": language,
        "final_beam": server.final_beam,
        "leads_s": leads,
        "paths": rows,
        "clips": per_clip,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "long", False):
        from bench.asr import long as asr_long

        return asr_long.run(args)
    if getattr(args, "language", None):
        return run_language(args)
    import numpy as np

    from app.catalog import registry as model_registry
    from app.speech.asr import WhisperASR
    from bench.kit.log import log as bench_log

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
