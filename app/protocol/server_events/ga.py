"""Server events as the GA dialect says them: the streams of a response's text and audio
are renamed (`response.text.delta` -> `response.output_text.delta`), an assistant's
content parts in items are `output_text`/`output_audio` (a response's own
`content_part` events keep `text`/`audio`), and an item joining the conversation is
`conversation.item.added`, followed at once by `conversation.item.done` when it is
already finished."""

from __future__ import annotations

import copy

from app.protocol.server_events.base import ServerEvent, Wire
from app.protocol.server_events.conversation import ItemCreated, ItemDone, ItemRetrieved
from app.protocol.server_events.response import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    OutputItemAdded,
    OutputItemDone,
    ResponseDone,
    TextDelta,
    TextDone,
)

RENAMED: dict[type[ServerEvent], str] = {
    AudioDelta: "response.output_audio.delta",
    AudioDone: "response.output_audio.done",
    AudioTranscriptDelta: "response.output_audio_transcript.delta",
    AudioTranscriptDone: "response.output_audio_transcript.done",
    TextDelta: "response.output_text.delta",
    TextDone: "response.output_text.done",
}
ITEM_ADDED = "conversation.item.added"  # GA's name of conversation.item.created
WITH_ITEM = (ItemCreated, ItemDone, ItemRetrieved, OutputItemAdded, OutputItemDone)
_PART_TYPES = {"audio": "output_audio", "text": "output_text"}


def ga_item(item: Wire) -> Wire:
    """An item as GA shows it (a copy: the event keeps its own)."""
    item = copy.deepcopy(item)
    if item.get("role") == "assistant":
        for part in item.get("content", []):
            part["type"] = _PART_TYPES.get(part["type"], part["type"])
    return item


def to_wire(event: ServerEvent, event_id: str) -> list[Wire]:
    wire = event.wire()
    wire["type"] = RENAMED.get(type(event), event.TYPE)
    if isinstance(event, WITH_ITEM):
        wire["item"] = ga_item(wire["item"])
    if isinstance(event, ResponseDone) and "output" in event.response:
        wire["response"] = {
            **event.response,
            "output": [ga_item(i) for i in event.response["output"]],
        }
    wire["event_id"] = event_id
    if not isinstance(event, ItemCreated):
        return [wire]
    wire["type"] = ITEM_ADDED
    if wire["item"].get("status") != "completed":
        return [wire]
    return [wire, {**wire, "type": ItemDone.TYPE, "event_id": event_id + "_done"}]
