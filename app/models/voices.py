"""The voices a session can choose (`session.voice`), each backed by a TTS engine.

- `piper-en_US-joe-medium`: Piper, neural, the default.
- `espeak-ng` / `espeak-ng:<language>`: espeak-ng, any language it speaks (e.g. `espeak-ng:de`).
- `coqui`: Coqui TTS when installed and `R1VOICE_COQUI_MODEL` names a local model.
- OpenAI's voice names (`alloy`, `echo`, ...) are accepted as aliases of the default
  voice, so standard clients that always send one keep working.
Backends load lazily on first use, except the default, which loads (and warms up) at start.
The list of voices is read once at start (asking espeak-ng takes 11-17 ms), and every
synthesis runs on the TTS executor, never on the event loop.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from app.executor import CancelToken, ModelExecutor
from app.models.espeak_tts import EspeakTTS, espeak_languages
from app.models.piper_tts import PiperTTS

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

    def __init__(self, default: PiperTTS) -> None:
        self.default_name = default.name
        self._loaded: dict[str, TTSBackend] = {default.name: default}
        self._lock = threading.Lock()
        names = [self.default_name, *OPENAI_VOICES]
        languages = espeak_languages()
        if languages:
            names += ["espeak-ng", *(f"espeak-ng:{lang}" for lang in languages)]
        if os.environ.get("R1VOICE_COQUI_MODEL"):
            names.append("coqui")
        self._voices = names
        self.executor = ModelExecutor("tts", workers=1, max_pending=64)

    def voices(self) -> list[str]:
        return list(self._voices)

    def resolve(self, voice: str | None) -> str:
        if voice in (None, *OPENAI_VOICES):
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
        if name == "coqui":
            from app.models.coqui_tts import CoquiTTS

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

    async def speak(self, text: str, out_rate: int, speed: float, voice: str) -> np.ndarray:
        """`synthesize` on the TTS executor; a cancelled caller stops it at a sentence."""
        return await self.executor.run_cancellable(
            lambda token: self.synthesize(text, out_rate, speed, voice, token)
        )
