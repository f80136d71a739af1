"""Speech over an answer, until its words say whether it interrupts.

Speech that lasts the barge-in hold while an answer plays *pauses* the answer (the client
is told `speech_started` and drops what it had queued); what happens next depends on the
words of that speech, as they come:
- words that are not a backchannel (see backchannels.py): an interruption. The answer is
  cancelled, truncated to what was heard, and the new turn is answered.
- only a backchannel ("uh-huh", "yeah", "嗯"): the answer resumes from where the client
  stopped hearing it; the speech stays a user item, marked as a backchannel, unanswered.
- no words (a cough, a knock, a breath, noise past the hold): the answer resumes.
- no transcript yet `timeout` after the speech ended: the answer resumes too. A later
  transcript with words still interrupts it. While a whole pass over the speech is
  still running then, its words are waited for, up to `grace` longer: a Mandarin
  "等一下," whose final pass looped and was redone took 2.5 s on two busy cores, and the
  answer resumed for a second before the words cancelled it.
Partial transcripts decide early only when they are already too long for a backchannel;
a whole pass over the speech (the early pass at its lull, the final one at its end)
decides the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.realtime.turns.backchannels import MAX_UNITS, has_words, is_backchannel
from app.text_units import units

# "wait": paused, the words are not known yet; "interrupt": cancel it and answer the new
# turn; "backchannel" and "no_words": resume it (why, for the client and the logs)
Verdict = Literal["wait", "interrupt", "backchannel", "no_words"]


@dataclass
class Interruption:
    """The decision on one spoken turn over a paused answer; only `interrupt` is final."""

    item_id: str  # the user turn that paused the answer
    timeout: int  # samples after the speech's end with no words: resume
    grace: int = 0  # samples more while a whole pass over the speech still runs
    transcribing: Callable[[], bool] = lambda: False  # such a pass runs now
    verdict: Verdict = "wait"
    _ended_at: int | None = None  # stream position where the speech last stopped

    @property
    def resumes(self) -> bool:
        return self.verdict in ("backchannel", "no_words")

    def partial(self, agreed: str) -> Verdict:
        """The words agreed so far while the user still speaks."""
        if (
            self.verdict != "interrupt"
            and len(units(agreed)) > MAX_UNITS
            and not is_backchannel(agreed)  # a loop on one acknowledgement is still one
        ):
            self.verdict = "interrupt"
        return self.verdict

    def heard(self, text: str, language: str | None) -> Verdict:
        """A whole pass over the speech so far (at a pause, or at its end)."""
        if self.verdict == "interrupt":
            return self.verdict
        if not has_words(text):
            self.verdict = "no_words"
        elif is_backchannel(text, language):
            self.verdict = "backchannel"
        else:
            self.verdict = "interrupt"
        return self.verdict

    def speech_ended(self, sample: int) -> None:
        self._ended_at = sample

    def speech_resumed(self) -> bool:
        """The speech went on after a pause. True when that undoes a resume: a whole pass
        over its first words ("Wait,") heard none or a backchannel, and the rest may be
        "stop": wait for its words again."""
        self._ended_at = None
        if self.resumes:
            self.verdict = "wait"
            return True
        return False

    def waited(self, now: int) -> Verdict:
        """Input audio reached `now`: no words `timeout` after the speech ended resume
        (`timeout + grace` while a pass whose words would decide still runs)."""
        ended = self._ended_at
        if self.verdict != "wait" or ended is None:
            return self.verdict
        limit = self.timeout + (self.grace if self.transcribing() else 0)
        if now - ended >= limit:
            self.verdict = "no_words"
        return self.verdict
