"""`r1voice bench asr --long`: turns longer than Whisper's 30 s window, in English and Mandarin.

Each clip is over 30 s of speech, built from real speech (../shared/data/speech: jfk,
the English MIT licence reading, the Mandarin recordings; the dev set of
bench/asr/devset.py: an LJSpeech passage, it over a phone line, Mandarin cut inside its
sentences) joined with short pauses, and from paragraphs read by espeak-ng and Piper.
Each is transcribed by the server's final pass over the whole clip as one turn
(`server`), by faster-whisper alone as its users run it (full window, beam 5, its
defaults), and, where the clip is made of pieces, with each piece a turn of its own as
the server hears speech whose pauses end turns: each turn's final pass prompted with
the words of the turns before it (`server_turns`, as TurnTranscriber does for a turn
soon after the last) and without (`server_turns_no_context`). Interleaved clip by clip
(the machine is shared). English is scored by word error rate, Mandarin by character
error rate (simplified characters, numbers read out), per clip and in all. Counts and
times are reported, never asserted.
"""

from __future__ import annotations

import functools
from typing import Any

RATE = 16_000
JFK = (
    "And so my fellow Americans, ask not what your country can do for you, "
    "ask what you can do for your country."
)
# The English half of multilingual.mp3 ends at 29.1 s, in the pause before German.
MIT_ENGLISH_S = 29.2
MIT_ENGLISH = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
    "software and associated documentation files, to deal in the software without "
    "restriction, including without limitation the rights to use, copy, modify, merge, "
    "publish, distribute, sublicense, and/or sell copies of the software, and to permit "
    "persons to whom the software is furnished to do so, subject to the following "
    "conditions: the above copyright notice and this permission notice shall be included in "
    "all copies or substantial portions of the software."
)
PARAGRAPH = [
    "The old lighthouse stood at the edge of the cliff for more than a hundred years.",
    "Every night the keeper climbed the narrow stairs and lit the great lamp at the top.",
    "Ships that passed in the dark could see its light from many miles away, and they knew "
    "to keep clear of the rocks below.",
    "One winter a terrible storm came in from the sea, and the wind broke every window in "
    "the tower.",
    "The keeper worked through the night to keep the flame burning, and in the morning a "
    "small fishing boat came safely into the harbor.",
    "The sailors walked up the hill to thank him, and they brought him fresh bread and a "
    "basket of apples.",
]
NOISE_RMS = 0.003  # room noise under the synthesized clips, so no pause is digital silence


def gap(seconds: float) -> Any:
    import numpy as np

    return np.zeros(int(seconds * RATE), np.float32)


def joined(parts: list[Any], pause_s: float) -> Any:
    import numpy as np

    pieces = []
    for part in parts:
        pieces += [part, gap(pause_s)]
    return np.concatenate(pieces[:-1])


def read_speech(name: str, cut_s: float | None = None) -> Any:
    """A recording of ../shared/data/speech at 16 kHz, cut at `cut_s`, silence trimmed."""
    import soundfile as sf

    from app.audio import resample
    from bench.voice.workload import speech_dir, trim_silence

    path = speech_dir() / name
    if not path.is_file():
        raise SystemExit(f"missing {path}: the benchmark reads human speech from ../shared")
    if path.suffix == ".mp3":
        from faster_whisper import decode_audio

        samples = decode_audio(str(path), sampling_rate=RATE)
    else:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        samples = resample(data.mean(axis=1), rate, RATE)
    return trim_silence(samples[: None if cut_s is None else int(cut_s * RATE)], RATE)


def _spoken(tts: Any, texts: list[str], pause_s: float, seed: int) -> Any:
    import numpy as np

    from bench.voice.workload import trim_silence

    parts = [trim_silence(np.asarray(tts.synthesize(t, RATE), np.float32), RATE) for t in texts]
    audio = joined(parts, pause_s)
    noise = np.random.default_rng(seed).normal(0, NOISE_RMS, audio.size)
    return (audio + noise).astype(np.float32)


def jfk_and_licence() -> tuple[Any, Any]:
    """jfk.flac up to its crowd noise, and the English half of multilingual.mp3."""
    jfk = read_speech("jfk.flac", 10.35)  # the rest is crowd noise
    mit = read_speech("multilingual.mp3", MIT_ENGLISH_S)
    return jfk, mit


def jfk_twice_and_a_half_then_licence() -> tuple[str, Any]:
    """(what was said, samples): 57 s, the licence starts after a 2 s pause near 30 s."""
    import numpy as np

    jfk, mit = jfk_and_licence()
    said = f"{JFK} {JFK} And so my fellow Americans, ask not what your country {MIT_ENGLISH}"
    return said, np.concatenate([joined([jfk, jfk, jfk[: int(5.2 * RATE)]], 0.5), gap(2.0), mit])


Clip = tuple[str, str, Any, list[Any]]  # name, what was said, samples, its turns (or [])


def pieced(name: str, said: str, pieces: list[Any], pause_s: float) -> Clip:
    """A clip made of `pieces` (each a turn where the server cuts at their pauses)."""
    return (name, said, joined(pieces, pause_s), pieces)


def dev_clips(language: str, log: Any) -> list[Clip]:
    """The dev set's clips (bench/asr/devset.py); none where its files are missing."""
    from bench.asr import devset

    if language == "zh":
        texts, parts = mandarin_recordings()
        cut = [half for part in parts for half in devset.halves(part)]
        phone = [devset.phone_line(p, i) for i, p in enumerate(cut)]
        return [
            pieced("zh-cut-mid-sentence-x2", texts * 2, cut * 2, 0.9),
            pieced("zh-cut-phone-line-x2", texts * 2, phone * 2, 0.9),
        ]
    try:
        lj = devset.ljspeech()
    except SystemExit as missing:
        log(f"  dev set skipped: {missing}")
        return []
    said = " ".join(text for text, _ in lj)
    pieces = [samples for _, samples in lj]
    jfk, _ = jfk_and_licence()
    phone = [devset.phone_line(p, i) for i, p in enumerate(pieces[:5])]
    return [
        pieced("ljspeech-passage", said, pieces, 0.35),
        pieced("ljspeech+jfk", " ".join(t for t, _ in lj[:5]) + f" {JFK}", [*pieces[:5], jfk], 0.6),
        pieced("ljspeech-phone-line", " ".join(t for t, _ in lj[:5]), phone, 0.35),
    ]


def english_clips(quick: bool) -> list[Clip]:
    """(name, what was said, float32 samples at 16 kHz, its turns), each over 30 s."""
    from app.catalog import registry as model_registry
    from app.speech.espeak_tts import EspeakTTS
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import TTS_VOICE

    jfk, mit = jfk_and_licence()
    clips = [
        pieced("jfk-x4", " ".join([JFK] * 4), [jfk] * 4, 0.5),
        pieced("mit-licence+jfk", f"{MIT_ENGLISH} {JFK}", [mit, jfk], 0.6),
    ]
    if quick:
        return clips
    said = " ".join(PARAGRAPH)
    clips.append(("jfk-x2.5+mit-licence", *jfk_twice_and_a_half_then_licence(), []))
    espeak = EspeakTTS("en-us")
    for pause in (0.6, 1.2):
        audio = _spoken(espeak, PARAGRAPH, pause, 1)
        clips.append((f"espeak-paragraph-{pause:g}s", said, audio, []))
    piper = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    read = _spoken(piper, PARAGRAPH, 0.4, 2)
    clips.append(pieced("piper-paragraph+jfk", f"{said} {JFK}", [read, jfk], 0.7))
    return clips


def mandarin_recordings() -> tuple[str, list[Any]]:
    """The Mandarin recordings of ../shared: what they say (in order), and their samples."""
    import re

    from bench.voice.workload import speech_dir

    readme = (speech_dir() / "zh" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([^`]+\.wav)` \| ([^|]+?) \|", readme, re.M)
    if not listed:
        raise SystemExit("no Mandarin recordings listed in ../shared/data/speech/zh/README.md")
    return "".join(said for _, said in listed), [read_speech(f"zh/{n}") for n, _ in listed]


def mandarin_clips(quick: bool) -> list[Clip]:
    """The Mandarin recordings of ../shared joined into one turn, and espeak-ng's questions."""
    text, parts = mandarin_recordings()
    clips = [pieced("zh-recordings-x3", text * 3, parts * 3, 0.8)]
    if quick:
        return clips
    clips.append(pieced("zh-recordings-x4", text * 4, parts * 4, 1.0))
    clips.append(("espeak-cmn-questions", *mandarin_questions(), []))
    return clips


def mandarin_questions() -> tuple[str, Any]:
    """(what was said, samples): espeak-ng's Mandarin questions twice over, 32 s."""
    from app.speech.espeak_tts import EspeakTTS
    from bench.voice.workload import QUESTIONS_ZH

    questions = QUESTIONS_ZH * 2
    return "".join(questions), _spoken(EspeakTTS("cmn"), questions, 0.7, 3)


def run(args: Any) -> dict[str, Any]:
    from pathlib import Path

    from app.speech.asr import WhisperASR
    from bench.asr.passes import locate
    from bench.asr.scoring import compare, final_times
    from bench.kit.log import log as bench_log
    from bench.kit.machine import describe

    log = functools.partial(bench_log, bench="asr")
    quick = bool(getattr(args, "quick", False))
    english = args.model
    mandarin = "whisper-base" if english == "whisper-tiny.en" else english
    languages: dict[str, Any] = {}
    for language, model, clips_of, unit in (
        ("en", english, english_clips, "WER"),
        ("zh", mandarin, mandarin_clips, "CER"),
    ):
        if args.language not in (None, language):
            continue
        asr = WhisperASR(locate(model), name=Path(model).name)
        if language not in asr.languages:
            log(f"asr --long {language}: {model} cannot transcribe it, skipped")
            continue
        clips = clips_of(quick) + ([] if quick else dev_clips(language, log))
        log(f"asr --long {language}: {len(clips)} clips over 30 s, {model}, {unit}")
        summary, rows = compare(asr, language, clips, log)
        for path, row in summary.items():
            log(
                f"  {path}: {unit} {row['error_rate']:.2%} over {row['clips']} clips, "
                f"{row['ms_per_clip']} ms a clip"
            )
        languages[language] = {"model": model, "metric": unit, "paths": summary, "clips": rows}
        if not quick:
            languages[language]["final_pass_s"] = final_times(asr, language, clips, log)
    return {
        "benchmark": "asr",
        "mode": "long",
        "quick": quick,
        "languages": languages,
        "machine": describe(),
    }
