"""The inputs: human recordings from ../shared, questions spoken by Piper, the run plan."""

from __future__ import annotations

from typing import Any

from app.audio import PROTOCOL_RATE

TTS_VOICE = "piper-en_US-joe-medium"
SPEECH_DIR_PARTS = ("..", "shared", "data", "speech")  # relative to the repository root

# Human recordings (file, cut at seconds, what was said). jfk.flac is cut at 10.35 s,
# after "country" (the rest is crowd noise, which would delay the end of speech).
# multilingual.mp3 is cut at 11.2 s, in the pause after "use," (it switches to German
# 30 s later); the reader skips the parenthesis `(the "Software")` of the MIT licence.
HUMAN_CLIPS: dict[str, tuple[str, float, str]] = {
    "jfk": (
        "jfk.flac",
        10.35,
        "And so my fellow Americans, ask not what your country can do for you, "
        "ask what you can do for your country.",
    ),
    "mit-licence-en": (
        "multilingual.mp3",
        11.2,
        "Permission is hereby granted, free of charge, to any person obtaining a copy of "
        "this software and associated documentation files, to deal in the software without "
        "restriction, including without limitation the rights to use",
    ),
}
# Mandarin (`bench voice --language zh`): the human recordings of ../shared/data/speech/zh
# (whole), questions read by espeak-ng as pinyin, and a Mandarin interruption.
HUMAN_CLIPS_ZH: dict[str, tuple[str, float, str]] = {
    "zh-cosyvoice": ("zh/cosyvoice_zero_shot_prompt.wav", 60.0, "希望你以后能够做的比我还好呦。"),
    "zh-funasr": ("zh/funasr_asr_example.wav", 60.0, "欢迎大家来体验达摩院推出的语音识别模型"),
    "zh-triton-long": (
        "zh/triton_mini_zh_long.wav",
        60.0,
        "富士康在印度工厂出现大规模感染目前工厂产量已下降超百分之五十",
    ),
}
QUESTIONS_ZH = [
    "中国的首都是哪里？",
    "一个星期有几天？",
    "天空是什么颜色的？",
    "热的反义词是什么？",
    "蜘蛛有几条腿？",
    "请说一种黄色的水果。",
]
INTERRUPTION_ZH = "等一下，停一停，说点别的吧。"
QUESTIONS = [
    "What is the capital of France?",
    "How many legs does a spider have?",
    "What color is the sky on a clear day?",
    "Name a fruit that is yellow.",
    "How many days are there in a week?",
    "What is the opposite of hot?",
]
LONG_ANSWER_PROMPT = "Tell me a long story about a dragon and a knight."
LONG_ANSWER_INSTRUCTIONS = (
    "You are a storyteller. Tell long, detailed stories in plain spoken sentences."
)
INTERRUPTION = "Wait, stop please. Tell me something else."
# Sentences cut at a phrase boundary, where people pause to think (`bench turns`' false
# cut-offs; `bench asr` hears them whole)
PAUSED_SENTENCES = [
    ("I would like to book a table for", "two people tomorrow evening."),
    ("Can you tell me how to get to", "the train station from here?"),
    ("My favourite thing about the summer is", "the long warm evenings."),
    ("What I really want to know is", "whether it will rain on Saturday."),
    ("Please remind me to call my sister", "when I get home", "after work."),
    ("The best way to learn a language is", "to speak it every day."),
]
# Questions whose long spoken answers `bench turns` plays back into the microphone
ECHO_QUESTIONS = [
    "Tell me about the moon in three sentences.",
    "Describe a sunny beach in three sentences.",
    "Tell me about elephants in three sentences.",
    "Explain how bread is made in three sentences.",
    "Describe autumn in a forest in three sentences.",
]


class Plan:
    def __init__(self, **kw: Any) -> None:
        self.levels: list[int] = kw["levels"]
        self.turns: int = kw["turns"]
        self.turns_concurrent: int = kw["turns_concurrent"]
        self.barge_in: int = kw["barge_in"]
        self.arrival_rate: float = kw["arrival_rate"]
        self.seed: int = kw["seed"]
        self.turn_timeout: float = kw["turn_timeout"]
        self.human_clips: list[str] = kw["human_clips"]
        self.paired: int = kw.get("paired", 0)  # rounds of the transports' paired turns


class Clip:
    """A clip ready to stream: PCM16 bytes at PROTOCOL_RATE, and what is said in it."""

    def __init__(self, name: str, kind: str, text: str, samples: Any) -> None:
        from app.audio import float_to_pcm16

        self.name, self.kind, self.text = name, kind, text
        self.pcm = float_to_pcm16(samples)
        self.duration_s = samples.size / PROTOCOL_RATE


def trim_silence(
    samples: Any,
    rate: int,
    rel_db: float = -20.0,
    frame_ms: int = 10,
    pad_ms: int = 30,
    lead_db: float | None = None,
) -> Any:
    """Cut leading and trailing frames quieter than `rel_db` below the loudest frame (RMS),
    keeping `pad_ms` around, so that the clip's last sample is speech, not room noise.
    `lead_db` (default: `rel_db`) is the bound for the leading frames alone."""
    import numpy as np

    frame = max(rate * frame_ms // 1000, 1)
    n = samples.size // frame
    if n == 0:
        return samples
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms >= rms.max() * 10 ** (rel_db / 20))
    lead = loud if lead_db is None else np.flatnonzero(rms >= rms.max() * 10 ** (lead_db / 20))
    pad = rate * pad_ms // 1000
    start = max(int(lead[0]) * frame - pad, 0)
    end = min((int(loud[-1]) + 1) * frame + pad, samples.size)
    return samples[start:end]


def speech_dir() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2].joinpath(*SPEECH_DIR_PARTS).resolve()


def prepare_clips(human: list[str], language: str | None = None) -> dict[str, Clip]:
    import numpy as np
    import soundfile as sf

    from app.audio import resample
    from app.catalog import registry as model_registry
    from app.speech.piper_tts import PiperTTS

    clips: dict[str, Clip] = {}
    folder = speech_dir()
    for name in human:
        filename, cut_s, text = {**HUMAN_CLIPS, **HUMAN_CLIPS_ZH}[name]
        path = folder / filename
        if not path.is_file():
            raise SystemExit(f"missing {path}: the benchmark reads human speech from ../shared")
        if path.suffix == ".mp3":
            from faster_whisper import decode_audio

            samples = decode_audio(str(path), sampling_rate=PROTOCOL_RATE)
        else:
            data, rate = sf.read(str(path), dtype="float32", always_2d=True)
            samples = resample(data.mean(axis=1), rate, PROTOCOL_RATE)
        samples = samples[: int(cut_s * PROTOCOL_RATE)]
        # A recording's first sound is often a soft consonant 20 dB under its loudest
        # frame (the 希 of 希望, the 富 of 富士康): the client would cut it off, and the
        # server heard 接到 and 故事康. Only the end is cut as hard (the clock starts there).
        clips[name] = Clip(name, "human", text, trim_silence(samples, PROTOCOL_RATE, lead_db=-40))
    tts: Any
    if language == "zh":
        from app.speech.espeak_tts import EspeakTTS

        tts, texts = EspeakTTS("cmn"), [*QUESTIONS_ZH, INTERRUPTION_ZH]
    else:
        tts = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
        texts = [*QUESTIONS, INTERRUPTION]
    for i, text in enumerate(texts):
        samples = np.asarray(tts.synthesize(text, PROTOCOL_RATE), dtype=np.float32)
        name = "interruption" if i == len(texts) - 1 else f"q{i + 1}"
        clips[name] = Clip(name, "tts", text, trim_silence(samples, PROTOCOL_RATE))
    return clips
