"""What `bench conversation` says over an answer: backchannels (Piper and espeak-ng in
English, espeak-ng `cmn` in Mandarin), real interruptions (Piper and espeak-ng), and
non-speech (noises.py). Each set is ordered round-robin over its voices or
kinds, so a short run (`--quick`) still has some of each."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, Literal

from app.audio import PROTOCOL_RATE

OverlapKind = Literal["backchannel", "interruption", "false"]

BACKCHANNELS_EN = ("Uh-huh.", "Mm-hmm.", "Yeah.", "Right.", "Okay.", "I see.", "Sure.", "Got it.")
BACKCHANNELS_ZH = ("嗯", "对", "好的", "是的")
INTERRUPTIONS = (
    "Stop.",
    "Wait, what about the dragon?",
    "Wait, stop.",
    "Hold on, what about the weather tomorrow?",
    "Stop, tell me something else.",
    "Wait, what about the ending?",
    "No, that is not what I asked.",
    "Sorry, can I ask you something?",
    "Hang on, go back a bit.",
    "Actually, tell me about cats instead.",
)


@dataclass(frozen=True)
class Overlap:
    """One sound said over an answer: float32 samples at the wire rate, trimmed so that its
    first and last samples are the sound's (the client's clock starts and ends there)."""

    part: OverlapKind
    name: str  # "piper: Uh-huh.", "cough #3"
    text: str  # what is said ("" for non-speech)
    voice: str  # piper | espeak | cmn | a non-speech kind
    language: str  # the session's transcription language: "en", or "zh" for Mandarin
    samples: Any

    @property
    def duration_s(self) -> float:
        return float(self.samples.size / PROTOCOL_RATE)


def _round_robin(groups: list[list[Overlap]]) -> list[Overlap]:
    return [o for row in zip_longest(*groups) for o in row if o is not None]


def load_voices() -> dict[str, Any]:
    from app.catalog import registry as model_registry
    from app.speech.espeak_tts import EspeakTTS
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import TTS_VOICE

    piper = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    return {"piper": piper, "espeak": EspeakTTS("en-us"), "cmn": EspeakTTS("cmn")}


def spoken(part: OverlapKind, voice: str, tts: Any, text: str, language: str = "en") -> Overlap:
    import numpy as np

    from bench.voice.workload import trim_silence

    samples = trim_silence(
        np.asarray(tts.synthesize(text, PROTOCOL_RATE), np.float32), PROTOCOL_RATE
    )
    return Overlap(part, f"{voice}: {text}", text, voice, language, samples)


def backchannels(n: int, voices: dict[str, Any] | None = None) -> list[Overlap]:
    voices = voices or load_voices()
    groups = [
        [spoken("backchannel", v, voices[v], t) for t in BACKCHANNELS_EN]
        for v in ("piper", "espeak")
    ]
    groups.append([spoken("backchannel", "cmn", voices["cmn"], t, "zh") for t in BACKCHANNELS_ZH])
    return _cycle(_round_robin(groups), n)


def interruptions(n: int, voices: dict[str, Any] | None = None) -> list[Overlap]:
    voices = voices or load_voices()
    groups = [
        [spoken("interruption", v, voices[v], t) for t in INTERRUPTIONS]
        for v in ("piper", "espeak")
    ]
    return _cycle(_round_robin(groups), n)


def non_speech(n: int, seed: int) -> list[Overlap]:
    from bench.conversation.noises import KINDS, make
    from bench.voice.workload import trim_silence

    out = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        samples = trim_silence(make(kind, seed * 1000 + i), PROTOCOL_RATE)
        out.append(Overlap("false", f"{kind} #{i // len(KINDS) + 1}", "", kind, "en", samples))
    return out


def _cycle(items: list[Overlap], n: int) -> list[Overlap]:
    return [items[i % len(items)] for i in range(n)]


def overlaps(
    part: OverlapKind, n: int, seed: int, voices: dict[str, Any] | None = None
) -> list[Overlap]:
    """The first `n` sounds of a part (the set repeats past its size)."""
    if part == "backchannel":
        return backchannels(n, voices)
    if part == "interruption":
        return interruptions(n, voices)
    return non_speech(n, seed)
