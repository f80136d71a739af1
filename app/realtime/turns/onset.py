"""When speech counts as the user's turn.

With nothing playing, speech counts at once. While an answer plays, or its audio may
still reach the microphone, it must last the barge-in hold first, so a cough or the
speaker's own echo does not cut the answer (until then `speech_started` is not sent:
clients flush playback on it), and it must not be our own voice coming back.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.realtime.turns.echo import CHECK_EVERY, WINDOW, EchoReference
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.turn import ResponseStarter, SpeechTurn


@dataclass
class Onset:
    audio: InputAudio
    responses: ResponseStarter
    hold: int  # samples of speech over an answer before it counts (the barge-in hold)
    echo: EchoReference | None = None  # what the client plays: our voice is no barge-in

    def must_hold(self) -> bool:
        """An answer runs or its audio may still reach the microphone: speech must hold."""
        return self.responses.responding or (self.echo is not None and self.echo.audible())

    async def passed_hold(self, turn: SpeechTurn) -> bool:
        """The unconfirmed `turn` is still speech, has lasted the hold, and is not echo."""
        return (
            not turn.confirmed
            and self.audio.speaking()
            and self.audio.end() - turn.start >= self.hold
            and not await self.heard_echo(turn)
        )

    def heard_over_answer(self, turn: SpeechTurn) -> bool:
        """Speech that may yet pass the hold is heard now (no gap as long as the hold)."""
        return self.must_hold() and not turn.echo and self.audio.silence() < self.hold

    async def was_noise(self, turn: SpeechTurn, end: int) -> bool:
        """The unconfirmed `turn` ended at `end`: a cough during an answer, shorter than
        the hold (one append may hold it all), or our own voice coming back (a short
        reply just after the answer still counts)."""
        cough = self.responses.responding and end - turn.start < self.hold
        return cough or await self.heard_echo(turn)

    def announced(self) -> None:
        """`speech_started` was sent: what the client had queued never plays."""
        if self.echo is not None:
            self.echo.stopped()

    async def heard_echo(self, turn: SpeechTurn) -> bool:
        """Whether the speech heard now is our own audio coming back (the last check's)."""
        echo, now = self.echo, self.audio.end()
        if echo is None or not echo.audible():
            return False
        if now - turn.echo_checked_at >= CHECK_EVERY:
            turn.echo_checked_at = now
            turn.note_echo(await self.audio.check_recent(WINDOW, echo.heard))
        return turn.echo
