"""Speech over an answer: the server's track held while it is heard, the answer paused
once it counts, and what its words decide done to that answer.

Speech over an answer counts only past the barge-in hold (see onset.py). When the server
plays the audio itself (a WebRTC track), the track goes silent as soon as such speech
starts, not at the hold, and plays on from the same sample if the sound proves no
barge-in (shorter than the hold, or our own echo). Speech that counts *pauses* the
answer, not cancels it: the speech's words decide (see interruption.py) whether it is
cancelled or resumes. The decision about the paused answer lives here alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from app.audio import PIPELINE_RATE
from app.protocol.server_events import Interruption as InterruptionEvent
from app.realtime.handoff import EventSink
from app.realtime.turns.backchannels import listening_prompt
from app.realtime.turns.interruption import Interruption, Verdict
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.turn import Answer, OutputHold, ResponseStarter, SpeechTurn

# Speech over an answer with no words by the false-interruption timeout resumes it; a whole
# pass over that speech still running then is waited for this much longer (its words
# decide); past it the ASR is stuck and the answer resumes anyway.
PASS_GRACE_S = 3.0


@dataclass
class BargeIn:
    responses: ResponseStarter
    emit: EventSink
    tasks: Tasks  # the cancelled answer's end runs there
    false_interruption_timeout_s: float  # no words this long after the speech: resume
    output: OutputHold | None = None  # the server's own track (WebRTC): silent at onset
    # the speech that paused the answer, and that answer, until its words decide
    interruption: Interruption | None = field(default=None, init=False)
    _paused: Answer | None = field(default=None, init=False)
    _applied: Verdict = field(default="wait", init=False)  # what was done to `_paused`
    _cancelling: asyncio.Task[None] | None = field(default=None, init=False)
    _holding: bool = field(default=False, init=False)  # `output` held for the open turn

    # -- the server's track ---------------------------------------------------------------

    def silence_with(self, output: OutputHold) -> None:
        """`output` goes silent at the first sound over an answer: a transport's own
        player (a xiaozhi board's queue), made after the session, in place of WebRTC's."""
        self.output = output

    def hold_while_heard(self, heard: bool) -> None:
        """Speech over the answer that has not passed the barge-in hold yet (`heard`: it
        is heard now, over an answer it may interrupt): the track goes silent at once
        (an interruption stops the audio ~300 ms sooner than at the hold), through gaps
        shorter than the hold ("Wait, ... stop"), and plays on after a gap as long (a
        cough: the answer waits the cough and the hold, not the VAD's silence window,
        seconds with semantic_vad) or once the speech is our own voice."""
        if not heard:
            self.release_output()
        elif self.output is not None and not self._holding:
            self._holding = True
            self.output.hold()

    def release_output(self) -> None:
        """The speech was decided on (paused the answer, or was no barge-in): the track
        plays on from where it held, or the resumed answer, later."""
        if self._holding and self.output is not None:
            self._holding = False
            self.output.release()

    # -- the paused answer ----------------------------------------------------------------

    def pause(self, turn: SpeechTurn, language: Callable[[], str | None]) -> None:
        """Speech that counts over an answer: pause it until the speech's words decide
        (they are transcribed with a prompt of acknowledgements in `language()`)."""
        answer = self.responses.pause()
        if answer is None:
            return
        timeout = int(self.false_interruption_timeout_s * PIPELINE_RATE)
        grace = int(PASS_GRACE_S * PIPELINE_RATE)
        self.interruption = turn.interruption = Interruption(
            turn.item_id, timeout, grace, turn.transcriber.transcribing
        )
        turn.transcriber.prompt = listening_prompt(language())
        self._paused, self._applied = answer, "wait"
        self._tell(turn.interruption)

    def speech_resumed(self, interruption: Interruption | None) -> None:
        """The speech of `interruption` went on after a pause. After a pass over its start
        let the answer resume, pause it again until the rest's words decide (before,
        "Wait," heard as nothing resumed the answer, which then played over "stop")."""
        if interruption is None or not interruption.speech_resumed():
            return
        answer = self._paused
        if interruption is not self.interruption or answer is None:
            return
        answer.pause_again()
        self._applied = "wait"
        self._tell(interruption)

    def partial(self, interruption: Interruption | None, agreed: str) -> None:
        """The words of the speech agreed so far, while it goes on."""
        if interruption is not None and interruption is self.interruption:
            self._apply(interruption.partial(agreed))

    def heard(self, interruption: Interruption | None, text: str, language: str | None) -> None:
        """A whole pass over the speech so far (at its lull: ~64 ms after the speech, not
        at its end)."""
        if interruption is not None and interruption is self.interruption:
            self._apply(interruption.heard(text, language))

    def waited(self, now: int) -> None:
        """Input audio reached `now`: no words by the timeout resume the answer."""
        if self.interruption is not None:
            self._apply(self.interruption.waited(now))

    def ended(
        self, interruption: Interruption | None, words: str | None, language: str | None = None
    ) -> None:
        """The turn that paused the answer is over (`words`: its final transcript, heard in
        `language`; None if it was dropped or failed): decide, and stop waiting."""
        if interruption is None or interruption is not self.interruption:
            return
        self._apply(interruption.heard(words or "", language))
        if self.interruption is interruption:
            self.interruption = self._paused = None

    async def cancelled(self) -> None:
        """Wait until the answer an interruption cancelled has ended (the old answer ends
        before the new one starts)."""
        if self._cancelling is not None:
            await asyncio.wait([self._cancelling])

    def _apply(self, verdict: Verdict) -> None:
        """Do what the decision says to the paused answer (once a verdict)."""
        interruption, answer = self.interruption, self._paused
        if interruption is None or answer is None or verdict == self._applied:
            return
        self._applied = verdict
        if verdict == "interrupt":
            self._cancelling = self.tasks.spawn(answer.cancel("turn_detected"), "interrupt")
            self.interruption = self._paused = None
        elif verdict in ("backchannel", "no_words"):
            answer.resume()
        self._tell(interruption)

    def _tell(self, interruption: Interruption) -> None:
        """Our extension event: the answer paused ("wait"), or why it went on or stopped."""
        self.emit(InterruptionEvent(item_id=interruption.item_id, verdict=interruption.verdict))
