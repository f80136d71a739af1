"""The voices a session can choose (`session.voice`), each backed by a TTS engine.

- `piper-en_US-joe-medium`: Piper, neural, the default.
- `espeak-ng` / `espeak-ng:<language>`: espeak-ng, any language it speaks (e.g. `espeak-ng:de`).
- `piper-<voice>`: every Piper voice (`<voice>.onnx` with its `<voice>.onnx.json`) in the
  directory `R1VOICE_PIPER_VOICES`; a voice whose files are broken is left out, with why.
- `auto`: per answer, a voice of the answer's language: the default voice if it speaks
  it, else a Piper voice that does, else espeak-ng's; so a Mandarin answer is never read
  by an English voice.
- `coqui`: Coqui TTS when installed and `R1VOICE_COQUI_MODEL` names a local model.
- OpenAI's voice names (`alloy`, `echo`, ...) are accepted as aliases of the default
  voice, so standard clients that always send one keep working.
Backends load lazily on first use, except the default, which loads (and warms up) at start.
The list of voices is read once at start (asking espeak-ng takes 11-17 ms), and every
synthesis runs on the TTS executor, never on the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

import numpy as np

from app.executor import CancelToken, ModelExecutor
from app.speech.espeak_tts import EspeakTTS, espeak_languages
from app.speech.piper_tts import PiperTTS, piper_language
from app.text_units import has_han

log = logging.getLogger("r1voice.tts")
AUTO = "auto"
# espeak-ng's voice names whose language is not their first subtag's ISO 639-1 code
ESPEAK_ISO = {"cmn": "zh", "cmn-latn-pinyin": "zh", "yue": "yue", "hak": "zh", "en-us": "en"}
# The espeak-ng voice `auto` prefers for a language with several
ESPEAK_FIRST = {"zh": "cmn", "en": "en-us", "pt": "pt-br"}
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


def espeak_iso(code: str) -> str:
    return ESPEAK_ISO.get(code, code.split("-")[0])


# Languages whose text is not in Latin letters: an answer in Latin letters after such a
# turn is not in the language heard (a Mandarin speaker asking for English)
NOT_LATIN = frozenset(
    [
        "zh",
        "yue",
        "ja",
        "ko",
        "ru",
        "uk",
        "be",
        "bg",
        "sr",
        "mk",
        "kk",
        "ky",
        "tg",
        "mn",
        "ar",
        "fa",
        "ur",
        "ps",
        "he",
        "yi",
        "el",
        "hy",
        "ka",
        "hi",
        "mr",
        "ne",
        "bn",
        "pa",
        "gu",
        "ta",
        "te",
        "kn",
        "ml",
        "si",
        "th",
        "lo",
        "km",
        "my",
        "bo",
        "am",
    ]
)


def text_language(text: str, heard: str | None) -> str:
    """The language an answer is in, as far as its script tells (Han: Chinese, unless
    the user was heard in Japanese), else the language the user was heard in when it is
    written in Latin letters too, else English."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    if has_han(text):
        return heard if heard in ("ja", "yue") else "zh"
    if heard is None or heard in NOT_LATIN:
        return "en"
    return heard


OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "sage",
    "shimmer",
    "verse",
    "marin",
    "cedar",
)


class TTSBackend(Protocol):
    name: str

    def synthesize(
        self, text: str, out_rate: int, speed: float = 1.0, cancel: CancelToken | None = None
    ) -> np.ndarray: ...


class VoiceCatalog:
    """The voices a session may pick, and the TTS executor they all speak on."""

    def __init__(self, default: PiperTTS, piper_voices: Path | None = None) -> None:
        self.default_name = default.name
        self._loaded: dict[str, TTSBackend] = {default.name: default}
        self._lock = threading.Lock()
        self._language: dict[str, str] = {default.name: default.language}
        self._piper: dict[str, Path] = {}
        self.unavailable: dict[str, str] = {}  # voices left out, each with why
        if piper_voices is not None:
            self._find_piper_voices(piper_voices)
        names = [self.default_name, AUTO, *OPENAI_VOICES, *self._piper]
        languages = espeak_languages()
        if languages:
            names += ["espeak-ng", *(f"espeak-ng:{lang}" for lang in languages)]
            self._language["espeak-ng"] = "en"
            self._language.update({f"espeak-ng:{lang}": espeak_iso(lang) for lang in languages})
        if os.environ.get("R1VOICE_COQUI_MODEL"):
            names.append("coqui")
        self._voices = names
        self.executor = ModelExecutor("tts", workers=1, max_pending=64)
        self._urgent: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext

    def give_way_with(self, hold: Callable[[], AbstractContextManager[None]]) -> None:
        """An answer's first clause, which the listener waits for, is synthesized inside
        `hold()`: the server's LLM gives it the cores meanwhile. Later clauses share them
        (pausing the LLM for each would only move the wait to the next clause)."""
        self._urgent = hold

    def _find_piper_voices(self, directory: Path) -> None:
        if not directory.is_dir():
            self.unavailable[str(directory)] = "R1VOICE_PIPER_VOICES is not a directory"
            log.warning("R1VOICE_PIPER_VOICES=%s is not a directory", directory)
            return
        for model in sorted(directory.glob("*.onnx")):
            name = f"piper-{model.stem}"
            if name == self.default_name:
                continue
            try:
                if model.stat().st_size == 0:
                    raise ValueError(f"{model.name} is empty")
                self._language[name] = piper_language(model)
            except (OSError, ValueError) as exc:
                self.unavailable[name] = str(exc)
                log.warning("Piper voice %s left out: %s", model, exc)
                continue
            self._piper[name] = model

    def voices(self) -> list[str]:
        return list(self._voices)

    def language(self, voice: str) -> str | None:
        """The language `voice` speaks (ISO 639-1), None when unknown (Coqui)."""
        return self._language.get(self.resolve(voice))

    def choose(self, voice: str, language: str) -> str:
        """The voice to speak an answer in `language` with: `voice` itself, unless it is
        `auto`, which takes the default voice, else a Piper voice, else an espeak-ng
        voice of that language (the default voice when none speaks it)."""
        if voice != AUTO:
            return self.resolve(voice)
        if self._language.get(self.default_name) == language:
            return self.default_name
        piper = [name for name in self._piper if self._language[name] == language]
        if piper:
            return piper[0]
        first = f"espeak-ng:{ESPEAK_FIRST.get(language, language)}"
        if first in self._language:
            return first
        espeak = [
            n for n in self._voices if n.startswith("espeak-ng:") and self._language[n] == language
        ]
        return espeak[0] if espeak else self.default_name

    def resolve(self, voice: str | None) -> str:
        if voice in (None, AUTO, *OPENAI_VOICES):
            return self.default_name
        return voice  # type: ignore[return-value]

    def backend(self, voice: str | None) -> TTSBackend:
        name = self.resolve(voice)
        with self._lock:
            if name not in self._loaded:
                self._loaded[name] = self._load(name)
            return self._loaded[name]

    def _load(self, name: str) -> TTSBackend:
        if name == "espeak-ng" or name.startswith("espeak-ng:"):
            return EspeakTTS(name.partition(":")[2] or "en-us")
        if name in self._piper:
            return PiperTTS(self._piper[name], name=name)
        if name == "coqui":
            from app.speech.coqui_tts import CoquiTTS

            return CoquiTTS(Path(os.environ.get("R1VOICE_COQUI_MODEL", "")))
        raise RuntimeError(f"unknown voice '{name}'")

    def synthesize(
        self,
        text: str,
        out_rate: int,
        speed: float = 1.0,
        voice: str | None = None,
        cancel: CancelToken | None = None,
    ) -> np.ndarray:
        """Speak `text` with `voice` (blocking: call it off the event loop)."""
        return self.backend(voice).synthesize(text, out_rate, speed, cancel)

    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> np.ndarray:
        """`synthesize` on the TTS executor, after the calls due within `slack_s`
        seconds; a cancelled caller stops it at a sentence. An answer's `first` clause
        (what the listener waits for) runs inside the hold of `give_way_with`."""

        def call(token: CancelToken) -> np.ndarray:
            with self._urgent() if first else contextlib.nullcontext():
                return self.synthesize(text, out_rate, speed, voice, token)

        return await self.executor.run_cancellable(call, slack_s)
