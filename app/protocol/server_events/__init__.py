"""Every event the server sends, one documented frozen dataclass each (base.py says what
they share). Import them from here: `from app.protocol.server_events import ResponseDone`.
How a client of each dialect receives one is `server_events.wire.to_wire` (one module per
dialect), imported from there: this package does not import its dialects back.
"""

from app.protocol.server_events.audio_buffers import (
    InputAudioCleared,
    InputAudioCommitted,
    InputAudioTimeoutTriggered,
    OutputAudioCleared,
    OutputAudioStarted,
    OutputAudioStopped,
    SpeechStarted,
    SpeechStopped,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionFailed,
)
from app.protocol.server_events.base import EVENT_TYPES, OMIT, ServerEvent, Wire
from app.protocol.server_events.conversation import (
    ItemCreated,
    ItemDeleted,
    ItemDone,
    ItemRetrieved,
    ItemTruncated,
)
from app.protocol.server_events.extensions import (
    Interruption,
    ReasoningDelta,
    ReasoningDone,
    TurnMetrics,
)
from app.protocol.server_events.response import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    OutputItemAdded,
    OutputItemDone,
    ResponseCreated,
    ResponseDone,
    TextDelta,
    TextDone,
)
from app.protocol.server_events.session import (
    Error,
    RateLimitsUpdated,
    SessionCreated,
    SessionUpdated,
)

__all__ = [
    "EVENT_TYPES",
    "OMIT",
    "AudioDelta",
    "AudioDone",
    "AudioTranscriptDelta",
    "AudioTranscriptDone",
    "ContentPartAdded",
    "ContentPartDone",
    "Error",
    "FunctionCallArgumentsDelta",
    "FunctionCallArgumentsDone",
    "InputAudioCleared",
    "InputAudioCommitted",
    "InputAudioTimeoutTriggered",
    "Interruption",
    "ItemCreated",
    "ItemDeleted",
    "ItemDone",
    "ItemRetrieved",
    "ItemTruncated",
    "OutputAudioCleared",
    "OutputAudioStarted",
    "OutputAudioStopped",
    "OutputItemAdded",
    "OutputItemDone",
    "RateLimitsUpdated",
    "ReasoningDelta",
    "ReasoningDone",
    "ResponseCreated",
    "ResponseDone",
    "ServerEvent",
    "SessionCreated",
    "SessionUpdated",
    "SpeechStarted",
    "SpeechStopped",
    "TextDelta",
    "TextDone",
    "TranscriptionCompleted",
    "TranscriptionDelta",
    "TranscriptionFailed",
    "TurnMetrics",
    "Wire",
]
