"""The speech-recognition models a session can choose (`input_audio_transcription.model`),
the server's (`R1VOICE_ASR_MODEL`) first, loaded once as `ModelCatalog` says. Each loaded
model keeps its own executor, so a session on whisper-base never queues behind one on
tiny.en. Beside the bundled models, every faster-whisper model directory the user put
in `R1VOICE_ASR_MODELS` (small, medium, large-v3, a distilled model) is offered by its
directory's name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from app.catalog import registry as model_registry
from app.catalog.model_catalog import ModelCatalog
from app.speech.asr import Transcript, WhisperASR
from app.speech.languages import model_languages

Loader = Callable[[str], WhisperASR]


class TranscriberCatalog(ModelCatalog[WhisperASR]):
    """The ASR models on offer, the loaded ones, and the thread that loads the others."""

    def __init__(
        self,
        default: WhisperASR,
        *,
        threads: int = 2,
        load: Loader | None = None,
        user_models: Path | None = None,
    ) -> None:
        self._threads = threads
        self._user_dirs: dict[str, Path] = {}
        super().__init__(
            default, default.name, role="asr", label="ASR model", load=load or self._from_registry
        )
        if user_models is not None:
            self._find_user_models(user_models)

    def _find_user_models(self, directory: Path) -> None:
        if not directory.is_dir():
            self._offer(str(directory), "R1VOICE_ASR_MODELS is not a directory")
            return
        taken = {*self.names(), *self.unavailable()}
        for path in sorted(p for p in directory.iterdir() if p.is_dir()):
            if path.name in taken:
                self._offer(str(path), f"{path} has the name of a bundled model: rename it")
            elif not (path / "model.bin").is_file():
                self._offer(path.name, f"{path} holds no model.bin (a CTranslate2 Whisper model)")
            else:
                self._user_dirs[path.name] = path
                self._offer(path.name)

    def languages(self, name: str) -> tuple[str, ...]:
        """What model `name` transcribes (read from its files: nothing is loaded)."""
        loaded = self.loaded(name)
        if loaded is not None:
            return loaded.languages
        try:
            path = self._user_dirs.get(name) or model_registry.locate(name, "asr")
            return model_languages(name, path)
        except Exception:  # not installed: its load will say so
            return model_languages(name)

    def close(self) -> None:
        for model in self._stop_loading():
            model.close()

    def _from_registry(self, name: str) -> WhisperASR:
        path: Path = self._user_dirs.get(name) or model_registry.locate(name, "asr")
        return WhisperASR(
            path,
            name=name,
            threads=self._threads,
            min_window_s=self.default.min_window_s,
            partials_apart=self.default.partials_apart,
            final_beam=self.default.final_beam,
        )


class ChosenTranscriber:
    """The model one session transcribes with; `session.update` switches it between passes.

    It is what the turn coordinator holds (a `SpeechRecognizer`): each pass asks for the
    model chosen at that moment, so a switch never reaches into a running pass.
    """

    def __init__(self, model: WhisperASR) -> None:
        self.model = model
        self.language: str | None = None  # the session's; None: detected per turn

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def busy(self) -> bool:
        return self.model.busy

    @property
    def fixed_language(self) -> str | None:
        return "en" if self.model.english_only else self.language or self.model.language

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript:
        return await self.model.run(
            audio_16k, prefix=prefix, language=self.language, prompt=prompt, context=context
        )

    async def partial(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        return await self.model.run(audio_16k, prefix=prefix, language=self.language, partial=True)
