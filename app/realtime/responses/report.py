"""What the client is told of one response: its response object, its message item (output
0), and the events that open it, stream its words and audio, and close it."""

from __future__ import annotations

from collections.abc import Callable

from app.protocol import events
from app.protocol.server_events import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    ItemCreated,
    OutputItemAdded,
    OutputItemDone,
    ResponseCreated,
    ResponseDone,
    TextDelta,
    TextDone,
    Wire,
)
from app.realtime.handoff import EventSink
from app.realtime.responses.spec import ResponseSpec
from app.speech.voices import AUTO


class ResponseReport:
    """The events of response `response_id` and its message `item_id`, sent to `emit`.
    `voice()` names the voice that spoke it, once chosen (shown for an `auto` voice)."""

    def __init__(
        self,
        ids: tuple[str, str],
        spec: ResponseSpec,
        conversation_id: str | None,
        emit: EventSink,
        voice: Callable[[], str | None],
    ) -> None:
        self.response_id, self.item_id = ids
        self.spec, self.conversation_id, self.emit, self._voice = spec, conversation_id, emit, voice

    def item(self, status: str, text: str = "") -> Wire:
        """The message item (output 0); no content until it is finished."""
        parts = [] if status == "in_progress" else [events.assistant_part(self.spec.audio, text)]
        return events.message_item(self.item_id, "assistant", status, parts)

    def response(
        self,
        status: str,
        output: list[Wire],
        details: Wire | None = None,
        usage: Wire | None = None,
    ) -> Wire:
        wire = events.response_object(self.response_id, status, output, details, usage)
        fields = self.spec.wire_fields(self.conversation_id)
        voice = self._voice()
        if voice is not None and self.spec.voice == AUTO:  # say which voice spoke
            fields["audio"]["output"]["voice"] = voice
        return {**wire, **fields}

    def opened(self, previous_item_id: str | None) -> None:
        """The response and its message began; the message joins the conversation after
        `previous_item_id` (unless the response is out of band)."""
        rid, emit = self.response_id, self.emit
        emit(ResponseCreated(response=self.response("in_progress", [])))
        emit(OutputItemAdded(response_id=rid, output_index=0, item=self.item("in_progress")))
        if self.spec.in_conversation:
            emit(ItemCreated(previous_item_id=previous_item_id, item=self.item("in_progress")))
        part = events.assistant_part(self.spec.audio, "")
        emit(ContentPartAdded(response_id=rid, item_id=self.item_id, part=part))

    def words(self, text: str) -> None:
        """The next words: the transcript of a spoken answer, the text of a written one."""
        delta = AudioTranscriptDelta if self.spec.audio else TextDelta
        self.emit(delta(response_id=self.response_id, item_id=self.item_id, delta=text))

    def audio(self, piece: bytes) -> None:
        audio = events.encode_base64(piece)
        self.emit(AudioDelta(response_id=self.response_id, delta=audio, item_id=self.item_id))

    def message_done(self, text: str, status: str) -> None:
        """The message is finished with `text` (all of it, or what was heard); `status` is
        the item's: completed or incomplete."""
        emit, rid, iid = self.emit, self.response_id, self.item_id
        if self.spec.audio:
            emit(AudioDone(response_id=rid, item_id=iid))
            emit(AudioTranscriptDone(response_id=rid, item_id=iid, transcript=text))
        else:
            emit(TextDone(response_id=rid, item_id=iid, text=text))
        part = events.assistant_part(self.spec.audio, text)
        emit(ContentPartDone(response_id=rid, item_id=iid, part=part))
        emit(OutputItemDone(response_id=rid, output_index=0, item=self.item(status, text)))

    def done(
        self, status: str, output: list[Wire], details: Wire | None, usage: Wire | None
    ) -> None:
        self.emit(ResponseDone(response=self.response(status, output, details, usage)))
