"""The effective configuration of one session, and its wire form for session.created/updated."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.protocol.errors import ProtocolError
from app.protocol.session_schema import (
    BETA_FORMATS,
    DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S,
    DEFAULT_HISTORY,
    DEFAULT_IDLE_NUDGES,
    AudioFormat,
    HistoryMode,
    McpTool,
    NamedToolChoice,
    SessionPatch,
    Tool,
    TurnDetection,
)
from app.settings import Settings
from app.speech.languages import WHISPER_LANGUAGES, language_error, normalize


def _format(value: str | AudioFormat) -> AudioFormat:
    return BETA_FORMATS[value] if isinstance(value, str) else value


def _format_to_wire(fmt: AudioFormat) -> str | dict[str, Any]:
    for name, beta in BETA_FORMATS.items():
        if beta == fmt:
            return name
    return fmt.model_dump()


def _openai_transcriber(name: str | None) -> bool:
    """OpenAI's transcription models (what SDKs send by default) run on the served ASR."""
    return name is not None and (
        name == "whisper-1" or (name.startswith("gpt-4o") and "transcribe" in name)
    )


def _openai_llm(name: str) -> bool:
    """OpenAI's Realtime model names (what SDKs send) and our alias keep the session's LLM."""
    return name == "r1voice" or name.startswith("gpt-")


@dataclass
class SessionConfig:
    instructions: str
    voice: str
    max_output_tokens: int
    temperature: float
    modalities: list[str] = field(default_factory=lambda: ["text", "audio"])
    input_format: AudioFormat = field(default_factory=AudioFormat)
    output_format: AudioFormat = field(default_factory=AudioFormat)
    turn_detection: TurnDetection | None = field(default_factory=lambda: TurnDetection())
    transcription_model: str = "whisper-tiny.en"
    # ISO 639-1 (`input_audio_transcription.language`); None: Whisper detects each turn's
    transcription_language: str | None = None
    # `input_audio_transcription: null`: no transcript events (the ASR still runs: the LLM
    # answers the words)
    show_transcripts: bool = True
    speed: float = 1.0
    priority: int = -1  # voice answers go ahead of bulk HTTP text (engine default >= 0)
    tools: list[Tool | McpTool] = field(default_factory=list)
    tool_choice: str | NamedToolChoice = "auto"
    # R1's thinking is silence in a voice turn: bounded unless the client says otherwise
    # (`session.r1voice.max_reasoning_tokens`, null: unbounded)
    max_reasoning_tokens: int | None = 256
    llm_model: str = ""  # the LLM answering (the session starts with the server's)
    # `session.r1voice.max_idle_nudges`: idle nudges in a row before waiting for the user
    max_idle_nudges: int = DEFAULT_IDLE_NUDGES
    # `session.r1voice.false_interruption_timeout`: seconds after speech that paused an
    # answer with no words heard, before the answer resumes
    false_interruption_timeout: float = DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S
    # `session.r1voice.history`: the oldest turns of a history past its budget are folded
    # into a summary ("summarize") or dropped ("drop")
    history: HistoryMode = DEFAULT_HISTORY

    @classmethod
    def default(cls, settings: Settings, llm_model: str) -> SessionConfig:
        return cls(
            llm_model=llm_model,
            instructions=settings.system_prompt,
            voice=settings.voice or settings.tts_voice,
            max_output_tokens=settings.max_response_tokens,
            temperature=settings.temperature,
            transcription_model=settings.asr_model,
            transcription_language=normalize(settings.asr_language),
            turn_detection=TurnDetection(
                type=settings.turn_detection,  # type: ignore[arg-type]
                eagerness=(  # type: ignore[arg-type]
                    settings.turn_eagerness if settings.turn_detection == "semantic_vad" else None
                ),
            ),
        )

    def snapshot(self) -> SessionConfig:
        """A copy to `restore` if an update is refused (apply replaces, never mutates,
        the lists it sets, so a shallow copy is enough)."""
        return copy.copy(self)

    def restore(self, snapshot: SessionConfig) -> None:
        """Back to `snapshot`, in place (the session's parts hold this object)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(snapshot, f.name))

    def apply(
        self,
        patch: SessionPatch,
        voices: list[str],
        transcribers: list[str],
        llms: list[str],
        languages: Callable[[str], tuple[str, ...]] = lambda _name: WHISPER_LANGUAGES,
    ) -> list[ProtocolError]:
        """Apply the fields the client set (an explicit null turn_detection disables VAD).

        A field whose value this server cannot honour (a voice it does not have, a
        transcription model or LLM it does not offer) is left as it was and reported in
        the returned errors (the session then restores its snapshot: an update applies
        whole or not at all). OpenAI's model names keep
        the models the session has.
        """
        given = patch.model_fields_set
        refused: list[ProtocolError] = []
        voice = patch.voice
        if voice is not None and voice not in voices:
            refused.append(
                ProtocolError(
                    "unsupported_voice",
                    f"voice '{voice}' is not available; available: {voices}",
                    param="session.voice",
                )
            )
            voice = None
        limit = patch.max_response_output_tokens  # validated by the schema (>= 1 or "inf")
        asked = patch.input_audio_transcription.model if patch.input_audio_transcription else None
        if asked in transcribers:
            self.transcription_model = asked  # type: ignore[assignment]
        elif asked is not None and not _openai_transcriber(asked):
            refused.append(
                ProtocolError(
                    "unsupported_model",
                    f"transcription model '{asked}' is not available; available: "
                    f"{transcribers} (OpenAI's transcription model names keep "
                    f"'{self.transcription_model}')",
                    param="session.input_audio_transcription.model",
                )
            )
        transcription = patch.input_audio_transcription
        if transcription is not None and "language" in transcription.model_fields_set:
            refusal = self._set_language(transcription.language, transcribers, languages)
            if refusal is not None:
                refused.append(refusal)
        if patch.model in llms:
            self.llm_model = patch.model  # type: ignore[assignment]
        elif patch.model is not None and not _openai_llm(patch.model):
            refused.append(
                ProtocolError(
                    "unsupported_model",
                    f"model '{patch.model}' is not available; available: {llms} "
                    f"(OpenAI's model names keep '{self.llm_model}')",
                    param="session.model",
                )
            )
        modalities = patch.output_modalities or patch.modalities
        if modalities is not None:
            self.modalities = list(modalities)
        if patch.instructions is not None:
            self.instructions = patch.instructions
        if patch.input_audio_format is not None:
            self.input_format = _format(patch.input_audio_format)
        if patch.output_audio_format is not None:
            self.output_format = _format(patch.output_audio_format)
        if "input_audio_transcription" in given:
            self.show_transcripts = patch.input_audio_transcription is not None
        if "turn_detection" in given:
            self.turn_detection = patch.turn_detection
        if patch.temperature is not None:
            self.temperature = patch.temperature
        if limit is not None:
            self.max_output_tokens = 4096 if limit == "inf" else int(limit)
        if voice is not None:
            self.voice = voice
        if patch.speed is not None:
            self.speed = patch.speed
        if patch.priority is not None:
            self.priority = patch.priority
        if patch.tools is not None:
            self.tools = list(patch.tools)
        if patch.tool_choice is not None:
            self.tool_choice = patch.tool_choice
        options = patch.r1voice
        if options is not None and "max_reasoning_tokens" in options.model_fields_set:
            self.max_reasoning_tokens = options.max_reasoning_tokens
        if options is not None and "max_idle_nudges" in options.model_fields_set:
            self.max_idle_nudges = options.max_idle_nudges
        if options is not None and "false_interruption_timeout" in options.model_fields_set:
            self.false_interruption_timeout = options.false_interruption_timeout
        if options is not None and "history" in options.model_fields_set:
            self.history = options.history
        return refused

    def _set_language(
        self,
        asked: str | None,
        transcribers: list[str],
        languages: Callable[[str], tuple[str, ...]],
    ) -> ProtocolError | None:
        """Take the language if the session's ASR model transcribes it, else say why."""
        code = normalize(asked)
        supported = languages(self.transcription_model)
        if code is None or code in supported:
            self.transcription_language = code
            return None
        others = (
            [n for n in transcribers if code in languages(n)] if code in WHISPER_LANGUAGES else []
        )
        return ProtocolError(
            "unsupported_language",
            language_error(code, self.transcription_model, supported, others),
            param="session.input_audio_transcription.language",
        )

    def to_wire(self, session_id: str) -> dict[str, Any]:
        return {
            "id": session_id,
            "object": "realtime.session",
            "model": "r1voice",
            "modalities": self.modalities,
            "instructions": self.instructions,
            "voice": self.voice,
            "input_audio_format": _format_to_wire(self.input_format),
            "output_audio_format": _format_to_wire(self.output_format),
            "input_audio_transcription": (
                {"model": self.transcription_model, "language": self.transcription_language}
                if self.show_transcripts
                else None
            ),
            "turn_detection": self.turn_detection.model_dump() if self.turn_detection else None,
            "temperature": self.temperature,
            "max_response_output_tokens": self.max_output_tokens,
            "speed": self.speed,
            "priority": self.priority,
            "tools": [t.model_dump() for t in self.tools],
            "tool_choice": self.tool_choice
            if isinstance(self.tool_choice, str)
            else self.tool_choice.model_dump(),
            "r1voice": {
                "max_reasoning_tokens": self.max_reasoning_tokens,
                "model": self.llm_model,
                "max_idle_nudges": self.max_idle_nudges,
                "false_interruption_timeout": self.false_interruption_timeout,
                "history": self.history,
            },
        }
