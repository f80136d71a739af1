"""Continued turns: speech resuming soon after a committed turn continues it.

Speech resuming within the merge window of the end of the previous VAD turn continues it,
unless its answer was already shown or played: that turn and its unseen answer are
deleted and the whole utterance is transcribed again, so nobody answers half a
sentence. A clear, a manual commit or an idle nudge ends that chance.

Speech a little later (within `context_window`, off by default: see CONTEXT_WINDOW_S) is
a turn of its own, but its final pass hears the last turn's words as Whisper's prompt
(TurnTranscriber.words_before): a sentence a pause cut in two decoded as the rest of its
first half. A continued turn is decoded again as one piece, with what came before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.audio import PIPELINE_RATE
from app.protocol.server_events import ItemDeleted
from app.realtime.conversation import Conversation
from app.realtime.handoff import EventSink
from app.realtime.turns.transcriber import stop_task
from app.realtime.turns.turn import CommittedTurn, ResponseStarter, SpeechTurn

# After a turn's end, speech within this is prompted with its words. Off (0): on the
# dev set of `bench asr --long` (each piece of a clip a turn, prompted with the turns
# before it or not) the prompt made 2 more errors in English (677 words, tiny.en) and
# 10 more in Mandarin cut inside its sentences (252 characters, whisper-base), fewer on
# no clip.
CONTEXT_WINDOW_S = 0.0


@dataclass
class Continuation:
    conversation: Conversation
    responses: ResponseStarter
    emit: EventSink
    merge_window: int  # samples after a turn's end within which speech continues it
    on_merge: Callable[[str], None] = lambda _detection: None  # a continued turn, counted
    # samples after a turn's end within which speech is prompted with its words
    context_window: int = int(CONTEXT_WINDOW_S * PIPELINE_RATE)
    last: CommittedTurn | None = field(default=None, init=False)  # may still be continued

    def committed(self, turn: CommittedTurn) -> None:
        """The latest committed turn: speech soon after it may continue it."""
        self.last = turn

    def forget(self) -> None:
        """Speech from now on is a turn of its own."""
        self.last = None

    def continues(self, start: int) -> bool:
        """Whether speech starting at `start` continues the last turn."""
        return self.last is not None and self.last.continued_by(start, self.merge_window)

    async def continue_into(self, turn: SpeechTurn, detection: str) -> None:
        """Speech that counts: when it continues the last turn (heard by `detection`),
        delete that turn and its unseen answer, and hand its audio and agreed words on."""
        last = self.last
        if last is None or not self.continues(turn.start):
            if (
                last is not None
                and last.vad
                and turn.start - last.end_sample <= self.context_window
            ):
                turn.transcriber.before = last.transcriber
            return
        self.last = None
        self.on_merge(detection)
        await stop_task(last.task)  # its item becomes ready (empty) at once
        if last.early is not None:
            await last.early.discard()
        if last.answer is not None and not last.answer.done:
            await self.responses.interrupt("turn_detected")
        for removed in self.conversation.delete_from(last.item):
            self.emit(ItemDeleted(item_id=removed.id))
        turn.carry = (last.audio, last.end_sample)
        turn.transcriber.agreement = last.transcriber.agreement  # agreed words still stand
        # decoded as one piece, with what came before the turn it continues
        turn.transcriber.before = last.transcriber.before
        turn.transcriber.context = last.transcriber.context
