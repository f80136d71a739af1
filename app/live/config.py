"""A Live session's configuration: `session.start`'s `session`, checked strictly (an
unknown field is refused by name, as OpenAI's server does), and what it means for the
realtime session underneath (a GA `session.update`) and for the client (the resource)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.protocol.errors import ProtocolError

MODELS = ("gpt-live-1", "gpt-live-1.1")  # both are this server's pipeline
MAX_INPUT_ITEMS = 128  # the protocol's bounds on the initial history
MAX_INPUT_TOKENS = 8192
MAX_INSTRUCTIONS_TOKENS = 16384
# Live's built-in voices; those our TTS has no voice of its own for speak in its default.
BUILT_IN_VOICES = [
    "alloy",
    "ash",
    "ballad",
    "beacon",
    "bossa",
    "cedar",
    "cinder",
    "coral",
    "delta",
    "echo",
    "gleam",
    "marin",
    "meridian",
    "quartz",
    "ripple",
    "sage",
    "shida",
    "shimmer",
    "stone",
    "tempo",
    "verse",
    "vesper",
    "willow",
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PcmFormat(Strict):
    type: Literal["audio/pcm"]
    rate: Literal[16000, 24000]


class G711Format(Strict):
    type: Literal["audio/pcmu", "audio/pcma"]
    rate: Literal[8000] = 8000


AudioFormat = Annotated[PcmFormat | G711Format, Field(discriminator="type")]


class CustomVoice(Strict):
    id: str


class AudioOutput(Strict):
    voice: str | CustomVoice | None = None


class Audio(Strict):
    format: AudioFormat | None = None
    output: AudioOutput | None = None


class ClientDelegation(Strict):
    type: Literal["client"]
    acknowledgement_delay_ms: int | None = Field(default=None, ge=0)


class ResponsesBackend(Strict):
    model: str
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    service_tier: str | None = None
    text: dict[str, Any] | None = None
    tool_choice: Any = None
    tools: list[dict[str, Any]] | None = None


class ResponsesDelegation(Strict):
    type: Literal["responses"]
    responses: ResponsesBackend
    acknowledgement_delay_ms: int | None = Field(default=None, ge=0)


Delegation = Annotated[ClientDelegation | ResponsesDelegation, Field(discriminator="type")]


class TextPart(Strict):
    text: str
    type: Literal["input_text", "text", "output_text"] | None = None


class InitialItem(Strict):
    role: Literal["developer", "user", "assistant"]
    content: list[TextPart] = Field(min_length=1, max_length=1)
    id: str | None = None
    status: Literal["incomplete", "completed"] | None = None
    type: Literal["message"] | None = None


class LiveConfig(Strict):
    model: str
    audio: Audio | None = None
    client: dict[str, Any] | None = None
    delegation: Delegation | None = None
    input: list[InitialItem] | None = None
    instructions: str | None = None
    safety_identifier: str | None = None
    store: bool | None = None
    triggers: list[dict[str, Any]] | None = None

    @field_validator("model")
    @classmethod
    def _live_model(cls, model: str) -> str:
        if model not in MODELS:
            raise ValueError(f"the Live model must be one of {', '.join(MODELS)}, not {model!r}")
        return model

    @field_validator("store")
    @classmethod
    def _not_stored(cls, store: bool | None) -> bool | None:
        if store:
            raise ValueError("this server does not store sessions (no forking): leave store out")
        return store

    @field_validator("triggers")
    @classmethod
    def _no_triggers(cls, triggers: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if triggers:
            raise ValueError("Decisions triggers are not served here: send [] or leave it out")
        return triggers

    @field_validator("input")
    @classmethod
    def _bounded(cls, items: list[InitialItem] | None) -> list[InitialItem] | None:
        if items is not None and len(items) > MAX_INPUT_ITEMS:
            raise ValueError(
                f"the initial history holds {len(items)} messages; at most {MAX_INPUT_ITEMS}"
            )
        return items

    @property
    def format(self) -> PcmFormat | G711Format:
        given = self.audio.format if self.audio else None
        return given or PcmFormat(type="audio/pcm", rate=24000)


def refusal(exc: ValidationError, prefix: str, event_id: str | None) -> ProtocolError:
    """The first problem pydantic found, naming the field as the client wrote it."""
    first = exc.errors()[0]
    param = ".".join(p for p in [prefix, *(str(p) for p in first["loc"])] if p)
    if first["type"] == "extra_forbidden":
        return ProtocolError(
            "unknown_parameter", f"unknown parameter '{param}'", param=param, event_id=event_id
        )
    if first["type"] == "missing":
        return ProtocolError(
            "missing_required_parameter",
            f"missing required parameter '{param}'",
            param=param,
            event_id=event_id,
        )
    message = str(first["msg"]).removeprefix("Value error, ")
    return ProtocolError(
        "invalid_value", f"invalid '{param}': {message}", param=param, event_id=event_id
    )


def parse_config(session: Any, event_id: str | None) -> LiveConfig:
    try:
        return LiveConfig.model_validate(session)
    except ValidationError as exc:
        raise refusal(exc, "session", event_id) from None


async def check_tokens(config: LiveConfig, llm: Any) -> None:
    """The initial history and instructions within the protocol's bounds, counted by the
    live model's tokenizer (`llm.count_tokens`)."""
    texts = [item.content[0].text for item in config.input or []]
    if texts and sum(await llm.count_tokens(texts)) > MAX_INPUT_TOKENS:
        raise ProtocolError(
            "input_too_large",
            f"the initial history is over {MAX_INPUT_TOKENS} tokens: keep the latest "
            "messages, or summarize the older ones into one",
            param="session.input",
        )
    instructions = config.instructions or ""
    if instructions and (await llm.count_tokens([instructions]))[0] > MAX_INSTRUCTIONS_TOKENS:
        raise ProtocolError(
            "instructions_too_large",
            f"the instructions are over {MAX_INSTRUCTIONS_TOKENS} tokens: shorten them",
            param="session.instructions",
        )


def voice_of(config: LiveConfig, voices: list[str], event_id: str | None) -> str | None:
    """Our voice for the configured one: ours by name or id; a Live built-in voice we have
    no voice of is spoken in the default (None)."""
    output = config.audio.output if config.audio else None
    voice = output.voice if output else None
    name = voice.id if isinstance(voice, CustomVoice) else voice
    if name is None or name in voices:
        return name
    if isinstance(voice, str) and voice in BUILT_IN_VOICES:
        return None
    raise ProtocolError(
        "invalid_value",
        f"unknown voice {name!r}: use a built-in Live voice or one of this server's: "
        f"{', '.join(voices)}",
        param="session.audio.output.voice",
        event_id=event_id,
    )


def realtime_update(config: LiveConfig, voice: str | None) -> dict[str, Any]:
    """The GA `session.update` that sets the realtime session up as `config` says: spoken
    answers, transcripts on, the WebSocket's format both ways."""
    fmt = config.format.model_dump()
    output: dict[str, Any] = {"format": fmt}
    if voice is not None:
        output["voice"] = voice
    session: dict[str, Any] = {
        "type": "realtime",
        "output_modalities": ["audio"],
        "audio": {
            "input": {"format": fmt, "transcription": {"model": "whisper-1"}},
            "output": output,
        },
    }
    if config.instructions and config.instructions.strip():
        session["instructions"] = config.instructions
    return {"type": "session.update", "session": session}


def resource(config: LiveConfig, session_id: str, expires_at: int) -> dict[str, Any]:
    """The session resource of `session.started`/`updated`/`closed`."""
    voice = config.audio.output.voice if config.audio and config.audio.output else None
    out = voice.model_dump() if isinstance(voice, CustomVoice) else (voice or "marin")
    delegation = config.delegation.model_dump(exclude_none=True) if config.delegation else None
    return {
        "id": session_id,
        "expires_at": expires_at,
        "model": config.model,
        "status": "active",
        "audio": {"format": config.format.model_dump(), "output": {"voice": out}},
        "delegation": delegation,
        "input": [item.model_dump(exclude_none=True) for item in config.input or []],
        "instructions": config.instructions or "",
        "store": False,
        "triggers": [],
    }
