"""Server events about the audio buffers: the input the client streams (speech found,
committed, cleared, transcribed) and, over WebRTC, the output the server plays."""

from __future__ import annotations

import dataclasses

from app.protocol.server_events.base import OMIT, Omit, ServerEvent, Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpeechStarted(ServerEvent):
    """Turn detection heard speech begin, `audio_start_ms` into the input stream."""

    TYPE = "input_audio_buffer.speech_started"
    item_id: str
    audio_start_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpeechStopped(ServerEvent):
    """Turn detection heard the speech end, `audio_end_ms` into the input stream."""

    TYPE = "input_audio_buffer.speech_stopped"
    item_id: str
    audio_end_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputAudioCommitted(ServerEvent):
    """The buffered input became user item `item_id`, after `previous_item_id`."""

    TYPE = "input_audio_buffer.committed"
    previous_item_id: str | None
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputAudioCleared(ServerEvent):
    """The reply to `input_audio_buffer.clear`."""

    TYPE = "input_audio_buffer.cleared"


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputAudioTimeoutTriggered(ServerEvent):
    """The user stayed silent after an answer (an idle nudge): the silence is committed as
    user item `item_id`."""

    TYPE = "input_audio_buffer.timeout_triggered"
    audio_start_ms: int
    audio_end_ms: int
    item_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranscriptionDelta(ServerEvent):
    """A piece of the transcript of user item `item_id`, while it is spoken."""

    TYPE = "conversation.item.input_audio_transcription.delta"
    item_id: str
    content_index: int = 0
    delta: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranscriptionCompleted(ServerEvent):
    """The final transcript of user item `item_id`; `usage` the seconds transcribed;
    `language` what it was heard as (left out for a silence never transcribed)."""

    TYPE = "conversation.item.input_audio_transcription.completed"
    item_id: str
    content_index: int = 0
    transcript: str
    usage: Wire
    language: str | Omit | None = OMIT


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranscriptionFailed(ServerEvent):
    """The transcription of user item `item_id` failed (`error`); the session goes on."""

    TYPE = "conversation.item.input_audio_transcription.failed"
    item_id: str
    content_index: int = 0
    error: Wire


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputAudioStarted(ServerEvent):
    """WebRTC: the server's track began playing answer `response_id`."""

    TYPE = "output_audio_buffer.started"
    response_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputAudioStopped(ServerEvent):
    """WebRTC: the server's track played all of answer `response_id`."""

    TYPE = "output_audio_buffer.stopped"
    response_id: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputAudioCleared(ServerEvent):
    """WebRTC: the rest of answer `response_id` was dropped unplayed."""

    TYPE = "output_audio_buffer.cleared"
    response_id: str
