"""The typed inputs and outputs of one response: what to answer, what it talks to, how it ended."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from app.llm import GenerationParams, LLMBackend
from app.llm.tool_calls import ToolSpec
from app.protocol.session_schema import AudioFormat, McpTool
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink
from app.realtime.responses.playback import Playback
from app.tools.mcp_toolset import McpToolset


class Voices(Protocol):
    """What a response needs of TTS (the VoiceCatalog, or a scripted one in tests)."""

    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> np.ndarray: ...

    def choose(self, voice: str, language: str) -> str:
        """The voice that speaks an answer in `language` (`auto` picks one by language)."""
        ...


@dataclass(frozen=True)
class ResponseSpec:
    """What to answer and how, resolved from the session and `response.create`."""

    audio: bool
    instructions: str
    params: GenerationParams
    voice: str
    speed: float
    output_format: AudioFormat
    early_user_text: str | None = None  # an early answer to a turn not yet committed
    early_language: str | None = None  # the language that turn was heard in
    idle_ms: int | None = None  # an idle nudge: the user has said nothing for this long
    in_conversation: bool = True  # False for `conversation: "none"` (out of band)
    metadata: dict[str, str] | None = None  # echoed in the response object
    tools: tuple[ToolSpec, ...] = ()  # functions the model may call
    tool_choice: str = "auto"  # "auto" | "none" | "required" | a function's name
    mcp_servers: tuple[McpTool, ...] = ()  # MCP servers whose tools the model may call
    note: str | None = None  # a stage direction ending the prompt (a tool's late result)
    say: str | None = None  # words said as they are, with no model (GPT-Live's commentary)
    language: str | None = None  # the session's transcription language (None: detected)
    event_id: str | None = None  # the client's `response.create`, echoed by its errors

    def wire_fields(self, conversation_id: str | None) -> dict[str, Any]:
        """What the response object says of these settings."""
        return {
            "conversation_id": conversation_id,
            "output_modalities": ["audio"] if self.audio else ["text"],
            "max_output_tokens": self.params.max_tokens,
            "audio": {"output": {"format": self.output_format.model_dump(), "voice": self.voice}},
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class ResponseOutcome:
    # "completed" | "incomplete" (cut at max_output_tokens) | "cancelled" | "failed" | "discarded"
    status: str
    visible: bool  # False for a held early answer that was never released
    stage_seconds: dict[str, float | None] | None = None  # voice turns: end of speech -> stage
    # a cancelled one's: "turn_detected" (barge-in), "client_cancelled", "server_shutdown"
    # (the drain's deadline), "session_expired"
    reason: str | None = None
    in_conversation: bool = True  # False for an out-of-band answer (`conversation: "none"`)


@dataclass(frozen=True, kw_only=True)
class ResponseDeps:
    """The narrow world a response talks to."""

    sink: EventSink
    conversation: Conversation
    llm: LLMBackend
    voices: Voices
    audio_lead_ms: int
    # each audio piece as it leaves (the session's echo reference listens)
    on_audio: Callable[[bytes, AudioFormat], None] = lambda _piece, _fmt: None
    # the items the history dropped to fit, once the answer is done, with the LLM that
    # answered (the session's HistorySummary folds them into its summary)
    on_dropped: Callable[[list[Item], LLMBackend], None] = lambda _items, _llm: None
    playback: Playback | None = None  # the server plays the audio (WebRTC); None: the client
    mcp: McpToolset | None = None  # the session's MCP servers (None: MCP tools are not offered)
    # a call that went on in the background is done: answer it with this note (Responses')
    on_tool_result: Callable[[str], None] = lambda _note: None
