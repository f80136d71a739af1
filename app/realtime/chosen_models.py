"""The models one session uses: its speech recognizer and its LLM, switched by
`session.update`. A model not loaded yet loads first (on its catalog's loader thread);
one that fails to load is refused and the session keeps the model it had."""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.catalog.registry import ModelError
from app.components import Components
from app.llm import LLMBackend
from app.llm.catalog import LLMCatalog
from app.protocol.errors import ProtocolError
from app.realtime.session_config import SessionConfig
from app.speech.languages import language_error
from app.speech.transcribers import ChosenTranscriber, TranscriberCatalog

log = logging.getLogger("r1voice.session")


class ChosenModels:
    def __init__(
        self,
        components: Components,
        meter_llm: Callable[[LLMBackend], LLMBackend] = lambda llm: llm,
    ) -> None:
        """`components.llm` answers first; `meter_llm` wraps an LLM loaded later (so it
        is seen by the app's metrics as the first one is)."""
        self._transcribers: TranscriberCatalog = components.transcribers
        self._llms: LLMCatalog = components.llms
        self._meter_llm = meter_llm
        self.asr = ChosenTranscriber(components.asr)  # the server's model to begin with
        self.llm = components.llm

    def transcriber_names(self) -> list[str]:
        return self._transcribers.names()

    def transcriber_languages(self, name: str) -> tuple[str, ...]:
        return self._transcribers.languages(name)

    def llm_names(self) -> list[str]:
        return self._llms.names()

    async def switch(self, config: SessionConfig) -> list[ProtocolError]:
        """Load the models `config` names (before `session.updated` confirms them)."""
        refused = [*await self._switch_transcriber(config), *await self._switch_llm(config)]
        language = config.transcription_language
        if language is not None and language not in self.asr.model.languages:
            config.transcription_language = None  # an English-only model: English it is
            message = language_error(language, self.asr.name, self.asr.model.languages, [])
            refused.append(
                ProtocolError(
                    "unsupported_language",
                    f"{message}; to switch to it, set the language to null (detected) or "
                    "one it transcribes in the same update",
                    param="session.input_audio_transcription.language",
                )
            )
        self.asr.language = config.transcription_language
        return refused

    async def _switch_transcriber(self, config: SessionConfig) -> list[ProtocolError]:
        name = config.transcription_model
        if name == self.asr.name:
            return []
        try:
            self.asr.model = await self._transcribers.load(name)
        except Exception as exc:  # a corrupt or missing model directory, a full loader
            config.transcription_model = self.asr.name
            param = "session.input_audio_transcription.model"
            return [_load_failed(f"transcription model '{name}'", exc, self.asr.name, param)]
        return []

    async def _switch_llm(self, config: SessionConfig) -> list[ProtocolError]:
        name = config.llm_model
        if name == self.llm.model:
            return []
        try:
            self.llm = self._meter_llm(await self._llms.load(name))
        except Exception as exc:  # weights that do not load, memory, a full loader
            config.llm_model = self.llm.model
            return [_load_failed(f"model '{name}'", exc, self.llm.model, "session.model")]
        return []


def _load_failed(what: str, exc: Exception, kept: str, param: str) -> ProtocolError:
    log.warning("cannot load %s: %s", what, exc)
    # a catalog's own words name the model and the cause
    cause = str(exc) if isinstance(exc, ModelError) else f"{what} failed to load ({exc})"
    return ProtocolError("model_load_failed", f"{cause}; kept '{kept}'", param=param)
