"""The session's settings as a client writes them in `session.update` (beta's flat field
names; dialect.py flattens GA's), validated with pydantic. Unknown fields inside known
objects are ignored (clients send options we do not use, e.g. `prompt`), but a known
field with the wrong type is refused, naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from app.audio import PROTOCOL_RATE
from app.llm.backend import MAX_REASONING_TOKENS


class Lenient(BaseModel):
    """Ignores unknown fields; refuses known ones of the wrong type."""

    model_config = ConfigDict(extra="ignore")


G711_TYPES = ("audio/pcmu", "audio/pcma")


class AudioFormat(Lenient):
    """GA-style audio format object; the beta strings are mapped onto it.

    G.711 is 8 kHz: GA's `audio/pcmu` and `audio/pcma` carry no `rate` (the SDK's types
    have none), so one left out is 8000, not PCM's 24000; another rate is refused."""

    type: Literal["audio/pcm", "audio/pcmu", "audio/pcma"] = "audio/pcm"
    rate: Literal[8000, 16000, 24000] = PROTOCOL_RATE

    @model_validator(mode="before")
    @classmethod
    def _g711_is_8khz(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("type") in G711_TYPES:
            rate = data.get("rate", 8000)
            if rate != 8000:
                raise ValueError(
                    f"{data['type']} is G.711 at 8 kHz: leave out 'rate' or give 8000, "
                    f"not {rate!r} (for another rate send audio/pcm)"
                )
            return {**data, "rate": 8000}
        return data


BETA_FORMATS = {
    "pcm16": AudioFormat(type="audio/pcm", rate=PROTOCOL_RATE),
    "g711_ulaw": AudioFormat(type="audio/pcmu", rate=8000),
    "g711_alaw": AudioFormat(type="audio/pcma", rate=8000),
}


# A token limit: a positive count or "inf" (the session's ceiling). 0 and negatives are
# refused with invalid_value rather than silently meaning "the default".
TokenLimit = Annotated[int, Field(ge=1, le=1_000_000)] | Literal["inf"]


# `semantic_vad` ends a turn as soon as the turn model hears it complete; an incomplete
# one ends anyway after this much silence (OpenAI documents low/medium/high as waiting at
# most 8/4/2 s; auto is medium). session.updated shows it as silence_duration_ms.
# `instructions` are echoed by every `session.updated` and sent with every answer: bounded
# like a client's item (R1VOICE_CONVERSATION_MAX_ITEM_CHARS' default).
MAX_INSTRUCTIONS_CHARS = 100_000
SEMANTIC_MAX_WAIT_MS = {"low": 8000, "medium": 4000, "auto": 4000, "high": 2000}

# OpenAI's bounds of `idle_timeout_ms` (its GA schema: an integer in 5000..30000, or null)
IDLE_TIMEOUT_MS = (5000, 30000)


class TurnDetection(Lenient):
    type: Literal["server_vad", "semantic_vad"] = "server_vad"
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    prefix_padding_ms: int = Field(300, ge=0, le=5000)
    silence_duration_ms: int = Field(500, ge=100, le=10000)
    eagerness: Literal["low", "medium", "high", "auto"] | None = None
    create_response: bool = True
    interrupt_response: bool = True
    # silence after an answer has played out that makes the server speak first (an
    # `input_audio_buffer.timeout_triggered`, then a response); null: never. Strict: a
    # string or a float is a client's mistake, not a number to guess.
    idle_timeout_ms: int | None = Field(
        None, ge=IDLE_TIMEOUT_MS[0], le=IDLE_TIMEOUT_MS[1], strict=True
    )

    @model_validator(mode="after")
    def _semantic_window(self) -> TurnDetection:
        if self.type == "semantic_vad":
            self.eagerness = self.eagerness or "auto"
            if "silence_duration_ms" not in self.model_fields_set:
                self.silence_duration_ms = SEMANTIC_MAX_WAIT_MS[self.eagerness]
        return self


class InputTranscription(Lenient):
    model: str | None = None
    language: str | None = None


DEFAULT_IDLE_NUDGES, MAX_IDLE_NUDGES = 2, 10
# seconds with no words after speech that paused an answer, before it resumes (LiveKit's
# name and meaning; its default is 2 s, ours 1.5 s: the longest natural pause in a sentence)
DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S, MAX_FALSE_INTERRUPTION_TIMEOUT_S = 1.5, 10.0
# what a history past its token budget does with its oldest turns: fold them into a
# running summary (app/realtime/history_summary.py) or drop them
HistoryMode = Literal["summarize", "drop"]
DEFAULT_HISTORY: HistoryMode = "summarize"


class R1VoiceOptions(Lenient):
    """`session.r1voice`: our own session fields, apart from OpenAI's (SDKs pass it through)."""

    # R1's thinking budget in tokens, for every answer; null: unbounded
    max_reasoning_tokens: int | None = Field(default=None, ge=0, le=MAX_REASONING_TOKENS)
    # idle nudges in a row (see TurnDetection.idle_timeout_ms) before the server waits for
    # the user to speak again: an absent user is not talked at forever
    max_idle_nudges: int = Field(default=DEFAULT_IDLE_NUDGES, ge=1, le=MAX_IDLE_NUDGES, strict=True)
    # speech over an answer pauses it; with no words this long after it, the answer resumes
    false_interruption_timeout: float = Field(
        default=DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S,
        gt=0,
        le=MAX_FALSE_INTERRUPTION_TIMEOUT_S,
        strict=True,
    )
    history: HistoryMode = DEFAULT_HISTORY


class Tool(Lenient):
    """A function the model may call (`tools` in session.update and response.create)."""

    type: Literal["function"] = "function"
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    parameters: dict[str, Any] | None = None


class McpToolFilter(Lenient):
    """Tools of an MCP server picked by name and/or by their `readOnlyHint`."""

    tool_names: list[str] | None = None
    read_only: bool | None = None


class McpApprovalFilter(Lenient):
    always: McpToolFilter | None = None
    never: McpToolFilter | None = None


class McpExtensions(Lenient):
    """`r1voice` in an `mcp` tool entry: our own fields (OpenAI's clients pass them on)."""

    # a call still running this long goes on in the background (answered when done);
    # 0: always wait for it; null: the server's R1VOICE_TOOLS_BACKGROUND_AFTER_S
    background_after_s: float | None = Field(default=None, ge=0, le=600)


class McpTool(Lenient):
    """An MCP server whose tools the model may call (OpenAI's `mcp` tool; app/tools/)."""

    type: Literal["mcp"]
    server_label: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    server_url: str = Field(min_length=1, max_length=2048)
    allowed_tools: list[str] | McpToolFilter | None = None
    require_approval: Literal["always", "never"] | McpApprovalFilter | None = None
    # sent to the MCP server, never echoed back (they carry credentials)
    headers: dict[str, str] | None = Field(default=None, exclude=True)
    server_description: str | None = None
    r1voice: McpExtensions | None = None


def _tool_kind(value: Any) -> str:
    kind = value.get("type", "function") if isinstance(value, dict) else value.type
    return "mcp" if kind == "mcp" else "function"


AnyTool = Annotated[
    Annotated[Tool, Tag("function")] | Annotated[McpTool, Tag("mcp")], Discriminator(_tool_kind)
]


class NamedToolChoice(Lenient):
    type: Literal["function", "mcp"]
    name: str
    server_label: str | None = None


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class Tracing(Lenient):
    """`session.tracing` as an object: it names the session's trace (trace attributes)."""

    workflow_name: str | None = Field(default=None, max_length=256)
    group_id: str | None = Field(default=None, max_length=256)
    metadata: dict[str, str | int | float | bool] | None = None

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data: Any) -> Any:
        if data != "auto" and not isinstance(data, dict):
            raise ValueError(
                f'session.tracing is "auto" or an object {{workflow_name, group_id, '
                f"metadata}}, not {data!r}"
            )
        return data


class SessionPatch(Lenient):
    """The fields of `session.update` we honour (beta flat names)."""

    # a bundled LLM to answer with; OpenAI's model names keep the session's LLM
    model: str | None = None
    modalities: list[Literal["text", "audio"]] | None = None
    output_modalities: list[Literal["text", "audio"]] | None = None
    instructions: str | None = Field(default=None, max_length=MAX_INSTRUCTIONS_CHARS)
    voice: str | None = None
    input_audio_format: Literal["pcm16", "g711_ulaw", "g711_alaw"] | AudioFormat | None = None
    output_audio_format: Literal["pcm16", "g711_ulaw", "g711_alaw"] | AudioFormat | None = None
    input_audio_transcription: InputTranscription | None = None
    turn_detection: TurnDetection | None = Field(default=None)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_response_output_tokens: TokenLimit | None = None
    speed: float | None = Field(default=None, ge=0.25, le=4.0)
    tools: list[AnyTool] | None = None
    tool_choice: ToolChoice | None = None
    tracing: Tracing | Literal["auto"] | None = None  # our trace's attributes (app/telemetry)
    # r1voice extension: scheduling priority of this session's answers (lower runs first).
    priority: int | None = Field(default=None, ge=-100, le=1000)
    r1voice: R1VoiceOptions | None = None
