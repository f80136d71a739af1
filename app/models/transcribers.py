"""The speech-recognition models a session can choose (`input_audio_transcription.model`).

The server's ASR model (`R1VOICE_ASR_MODEL`) loads and warms up at start; every other
bundled ASR model that is installed loads the first time a session asks for it (on a
loader thread of its own: a load takes a while, and no transcription waits behind
it) and stays loaded for the next session. Each loaded model keeps its own
executor, so a session on whisper-base never queues behind one on tiny.en.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from app.executor import ModelExecutor
from app.models import registry as model_registry
from app.models.asr import Transcript, WhisperASR

Loader = Callable[[str], WhisperASR]


class TranscriberCatalog:
    """The ASR models on offer, the loaded ones, and the thread that loads the others."""

    def __init__(
        self, default: WhisperASR, *, threads: int = 2, load: Loader | None = None
    ) -> None:
        self.default = default
        self._threads = threads
        self._load_model = load or self._from_registry
        self._loaded: dict[str, WhisperASR] = {default.name: default}
        self._lock = threading.Lock()
        self._unavailable: dict[str, str] = {}
        names = [default.name]
        for row in model_registry.list_models():
            if row.role != "asr" or row.name == default.name:
                continue
            if row.state == "ready":
                names.append(row.name)
            else:  # `location` holds the reason (how to prepare or install it)
                self._unavailable[row.name] = row.location
        self._names = names
        self._loader = ModelExecutor("asr-load", workers=1, max_pending=8)

    def names(self) -> list[str]:
        """The models a session may choose now (the default first)."""
        return list(self._names)

    def unavailable(self) -> dict[str, str]:
        """Bundled ASR models that cannot be chosen, each with what to do about it."""
        return dict(self._unavailable)

    def loaded(self, name: str) -> WhisperASR | None:
        with self._lock:
            return self._loaded.get(name)

    def get(self, name: str) -> WhisperASR:
        """The model `name`, loading it now if needed (blocking: call it off the event loop)."""
        if name not in self._names:
            raise model_registry.ModelError(
                f"ASR model '{name}' is not available; available: {self._names}"
            )
        with self._lock:
            model = self._loaded.get(name)
            if model is None:
                model = self._loaded[name] = self._load_model(name)
            return model

    async def load(self, name: str) -> WhisperASR:
        """`get` on the loader thread (a loaded model returns at once)."""
        model = self.loaded(name)
        return model if model is not None else await self._loader.run(self.get, name)

    def close(self) -> None:
        self._loader.shutdown()
        with self._lock:
            models = list(self._loaded.values())
        for model in models:
            model.executor.shutdown()

    def _from_registry(self, name: str) -> WhisperASR:
        path: Path = model_registry.locate(name, "asr")
        return WhisperASR(
            path, name=name, threads=self._threads, min_window_s=self.default.min_window_s
        )


class ChosenTranscriber:
    """The model one session transcribes with; `session.update` switches it between passes.

    It is what the turn coordinator holds (a `SpeechRecognizer`): each pass asks for the
    model chosen at that moment, so a switch never reaches into a running pass.
    """

    def __init__(self, model: WhisperASR) -> None:
        self.model = model

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def busy(self) -> bool:
        return self.model.busy

    async def run(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        return await self.model.run(audio_16k, prefix=prefix)
