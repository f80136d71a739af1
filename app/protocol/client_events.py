"""The client events of the OpenAI Realtime protocol, as pydantic schemas (parsing.py
reads them): a malformed event becomes an `error` event with a `code` and a message
naming the field, and the session goes on. The session's own fields are
session_schema.py's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PrivateAttr, Tag

from app.protocol.errors import ProtocolError
from app.protocol.session_schema import (
    MAX_INSTRUCTIONS_CHARS,
    AnyTool,
    Lenient,
    SessionPatch,
    TokenLimit,
    ToolChoice,
)


class _ClientEvent(Lenient):
    """Every client event may carry an `event_id`, echoed in errors about it."""

    event_id: str | None = None


class SessionUpdate(_ClientEvent):
    type: Literal["session.update"]
    session: SessionPatch
    # Fields whose value is outside the schema: the session refuses the whole update.
    _refused: list[ProtocolError] = PrivateAttr(default_factory=list)

    @property
    def refused(self) -> list[ProtocolError]:
        return self._refused


class AudioAppend(_ClientEvent):
    type: Literal["input_audio_buffer.append"]
    audio: str


class AudioCommit(_ClientEvent):
    type: Literal["input_audio_buffer.commit"]


class AudioClear(_ClientEvent):
    type: Literal["input_audio_buffer.clear"]


class OutputAudioClear(_ClientEvent):
    """WebRTC only: stop the answer's audio the server plays (see app/server/webrtc)."""

    type: Literal["output_audio_buffer.clear"]


class ContentPart(Lenient):
    type: Literal["input_text", "text", "output_text", "input_audio", "audio", "output_audio"]
    text: str | None = None
    transcript: str | None = None
    audio: str | None = None


class ConversationItem(Lenient):
    id: str | None = None
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system"]
    content: list[ContentPart] = Field(min_length=1)


class FunctionCallItem(Lenient):
    id: str | None = None
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str = "{}"


class FunctionCallOutputItem(Lenient):
    id: str | None = None
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str


class McpApprovalResponseItem(Lenient):
    """The client's answer to an `mcp_approval_request` item (app/tools)."""

    id: str | None = None
    type: Literal["mcp_approval_response"]
    approval_request_id: str = Field(min_length=1)
    approve: bool
    reason: str | None = None


ITEM_KINDS = ("function_call", "function_call_output", "mcp_approval_response")


def _item_kind(value: Any) -> str:
    kind = value.get("type", "message") if isinstance(value, dict) else getattr(value, "type", "")
    return kind if kind in ITEM_KINDS else "message"


AnyItem = Annotated[
    Annotated[ConversationItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[McpApprovalResponseItem, Tag("mcp_approval_response")],
    Discriminator(_item_kind),
]


class ItemCreate(_ClientEvent):
    type: Literal["conversation.item.create"]
    previous_item_id: str | None = None
    item: AnyItem


class ItemDelete(_ClientEvent):
    type: Literal["conversation.item.delete"]
    item_id: str


class ItemRetrieve(_ClientEvent):
    type: Literal["conversation.item.retrieve"]
    item_id: str


class ItemTruncate(_ClientEvent):
    type: Literal["conversation.item.truncate"]
    item_id: str
    content_index: int = Field(0, ge=0)
    audio_end_ms: int = Field(ge=0)


class ResponseOptions(Lenient):
    modalities: list[Literal["text", "audio"]] | None = None
    output_modalities: list[Literal["text", "audio"]] | None = None
    instructions: str | None = Field(default=None, max_length=MAX_INSTRUCTIONS_CHARS)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_output_tokens: TokenLimit | None = None
    max_response_output_tokens: TokenLimit | None = None
    conversation: Literal["auto", "none"] | None = None
    metadata: dict[str, str] | None = None
    tools: list[AnyTool] | None = None
    tool_choice: ToolChoice | None = None


class ResponseCreate(_ClientEvent):
    type: Literal["response.create"]
    response: ResponseOptions | None = None


class ResponseCancel(_ClientEvent):
    type: Literal["response.cancel"]
    response_id: str | None = None


ClientEvent = Annotated[
    SessionUpdate
    | AudioAppend
    | AudioCommit
    | AudioClear
    | OutputAudioClear
    | ItemCreate
    | ItemDelete
    | ItemTruncate
    | ItemRetrieve
    | ResponseCreate
    | ResponseCancel,
    Field(discriminator="type"),
]
