"""Server events of one response: its start and end, its output items and their parts,
the text, audio and transcript as they stream, and its function calls."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponseCreated(ServerEvent):
    """A response began (`response`: the response object, in progress)."""

    TYPE = "response.created"
    response: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponseDone(ServerEvent):
    """A response ended, however it ended (`response.status`), with its output items and
    usage."""

    TYPE = "response.done"
    response: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputItemAdded(ServerEvent):
    """Output item `output_index` of the response began (0: the message; then calls)."""

    TYPE = "response.output_item.added"
    response_id: str
    output_index: int
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputItemDone(ServerEvent):
    """Output item `output_index` of the response is finished."""

    TYPE = "response.output_item.done"
    response_id: str
    output_index: int
    item: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContentPartAdded(ServerEvent):
    """The message's content part began (empty)."""

    TYPE = "response.content_part.added"
    response_id: str
    item_id: str
    output_index: int = 0
    content_index: int = 0
    part: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContentPartDone(ServerEvent):
    """The message's content part is finished (all its text)."""

    TYPE = "response.content_part.done"
    response_id: str
    part: Wire
    item_id: str
    output_index: int = 0
    content_index: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextDelta(ServerEvent):
    """The next words of a text answer."""

    TYPE = "response.text.delta"
    response_id: str
    item_id: str
    output_index: int = 0
    content_index: int = 0
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextDone(ServerEvent):
    """A text answer's whole text."""

    TYPE = "response.text.done"
    response_id: str
    text: str
    item_id: str
    output_index: int = 0
    content_index: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class AudioTranscriptDelta(ServerEvent):
    """The next words of a spoken answer (before they are spoken)."""

    TYPE = "response.audio_transcript.delta"
    response_id: str
    item_id: str
    output_index: int = 0
    content_index: int = 0
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class AudioTranscriptDone(ServerEvent):
    """A spoken answer's whole text (what was heard of it, when it was cut)."""

    TYPE = "response.audio_transcript.done"
    response_id: str
    transcript: str
    item_id: str
    output_index: int = 0
    content_index: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class AudioDelta(ServerEvent):
    """A piece of a spoken answer's audio (`delta`: base64, in the session's output
    format). Not sent over WebRTC, where the server's track plays it."""

    TYPE = "response.audio.delta"
    response_id: str
    delta: str
    item_id: str
    output_index: int = 0
    content_index: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class AudioDone(ServerEvent):
    """A spoken answer's audio is all sent."""

    TYPE = "response.audio.done"
    response_id: str
    item_id: str
    output_index: int = 0
    content_index: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class FunctionCallArgumentsDelta(ServerEvent):
    """A function call's arguments (all at once: a call is announced when whole)."""

    TYPE = "response.function_call_arguments.delta"
    call_id: str
    delta: str
    response_id: str
    item_id: str
    output_index: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class FunctionCallArgumentsDone(ServerEvent):
    """A function call is whole: the function's `name` and its `arguments` (JSON)."""

    TYPE = "response.function_call_arguments.done"
    call_id: str
    name: str
    arguments: str
    response_id: str
    item_id: str
    output_index: int
