"""A committed turn: its user item, its final transcription, the events that report
them, and its answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from app.audio import PIPELINE_RATE
from app.protocol import events
from app.protocol.errors import ProtocolError
from app.protocol.server_events import (
    InputAudioCommitted,
    ItemCreated,
    TranscriptionCompleted,
    TranscriptionFailed,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink
from app.realtime.turns.turn import CommittedTurn, ResponseStarter

log = logging.getLogger("r1voice.turns")


def add_audio_item(conversation: Conversation, emit: EventSink, item: Item) -> None:
    """A committed stretch of input audio joins the conversation as a user item."""
    previous = conversation.add(item)
    emit(InputAudioCommitted(previous_item_id=previous, item_id=item.id))
    content = [{"type": "input_audio", "transcript": None}]
    item_wire = events.message_item(item.id, "user", "completed", content)
    emit(ItemCreated(previous_item_id=previous, item=item_wire))


def same_utterance(early_text: str, final_text: str) -> bool:
    """Whether an early answer answered exactly what the final transcript says."""
    return early_text.strip() == final_text.strip()


async def transcribe_committed(turn: CommittedTurn, emit: EventSink | None) -> bool:
    """Fill in the turn's text; report it through `emit` (None: transcripts are off).

    Returns whether it succeeded. The item becomes ready whatever happens (empty on a
    failure or a cancellation), so an answer waiting for the history never hangs.
    """
    item = turn.item
    try:
        item.text = await turn.transcriber.finish(turn.heard, turn.end_sample)
    except asyncio.CancelledError:
        item.text = ""
        raise
    except Exception as exc:  # a failed transcription must not end the session
        log.exception("transcription failed")
        item.text = ""
        if emit is not None:
            error = {"type": "server_error", "code": "asr_failed", "message": str(exc)}
            emit(TranscriptionFailed(item_id=item.id, error=error))
        return False
    finally:
        item.ready.set()
    turn.timing.transcript_at = time.monotonic()
    turn.timing.language = item.language = turn.transcriber.language
    if emit is not None:
        usage = {"type": "duration", "seconds": round(turn.audio.size / PIPELINE_RATE, 3)}
        completed = TranscriptionCompleted(
            item_id=item.id, transcript=item.text, usage=usage, language=item.language
        )
        emit(completed)
    return True


async def answer_committed(
    turn: CommittedTurn, responses: ResponseStarter, respond: Callable[[], bool]
) -> None:
    """After the final transcript: release the early answer if it replied to exactly these
    words, else drop it and (when `respond()` still says so) start a fresh answer."""
    text = turn.item.text or ""
    early, turn.early = turn.early, None
    if early is not None and not early.done and same_utterance(early.early_user_text or "", text):
        early.release(turn.timing, turn.item.id)
        turn.answer = early
        return
    if early is not None:
        await early.discard()
    # Nothing intelligible was said (silence, a cough): do not answer it.
    if text.strip() and respond():
        try:
            turn.answer = responses.start(timing=turn.timing)
        except ProtocolError:  # the client started its own response meanwhile
            log.debug("not answering turn %s: a response is active", turn.item.id)
