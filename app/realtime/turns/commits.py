"""Committed turns: each joins the conversation, is transcribed, then answered.

A turn that paused an answer is answered only if its words interrupted it (a backchannel
or no words let the answer go on), and only once the cancelled answer has ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.realtime.conversation import Conversation
from app.realtime.handoff import EventSink
from app.realtime.turns.barge_in import BargeIn
from app.realtime.turns.committed import add_audio_item, answer_committed, transcribe_committed
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.turn import CommittedTurn, ResponseStarter


@dataclass
class Commits:
    conversation: Conversation
    responses: ResponseStarter
    emit: EventSink
    barge_in: BargeIn  # told the words of a turn that paused an answer
    tasks: Tasks  # the final passes run there
    _closed: bool = field(default=False, init=False)

    def commit(self, turn: CommittedTurn, *, auto_respond: bool, show_transcripts: bool) -> None:
        """Add the turn's user item, and transcribe it in the background (then answer it,
        when `auto_respond`); `show_transcripts`: the client is told the transcript."""
        add_audio_item(self.conversation, self.emit, turn.item)
        work = self._transcribe(turn, auto_respond, show_transcripts)
        turn.task = self.tasks.spawn(work, "asr-final")

    def close(self) -> None:
        """No answer starts from now on."""
        self._closed = True

    async def _transcribe(
        self, turn: CommittedTurn, auto_respond: bool, show_transcripts: bool
    ) -> None:
        heard = await transcribe_committed(turn, self.emit if show_transcripts else None)
        interruption = turn.interruption
        self.barge_in.ended(interruption, turn.item.text if heard else None, turn.item.language)
        if interruption is not None and interruption.verdict != "interrupt":
            return  # a backchannel or no words: the answer went on, this is not answered
        if interruption is not None:
            await self.barge_in.cancelled()  # the old answer ends before the new one starts
        if heard:
            await answer_committed(turn, self.responses, lambda: auto_respond and not self._closed)
        elif turn.early is not None:  # a failed pass answers nothing: its held early answer goes
            early, turn.early = turn.early, None
            await early.discard()
