"""A board's speaker as the session's barge-in sees it (its `OutputHold`).

A Realtime client stops its player on `speech_started`, which comes only once speech
over the answer has lasted the barge-in hold. A board in `realtime` mode is told sooner:
at the first sound the session's VAD hears over the answer it gets `tts stop` and the
frames it had not played wait (`Replies.hold`). When that sound is decided on, the held
answer plays on (a cough, our own echo) or is dropped (speech that counts: the session
pauses the answer, and its words decide whether it resumes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.xiaozhi.replies import Replies


@dataclass
class BoardHold:
    replies: Replies
    realtime: Callable[[], bool]  # the board listens while it speaks (`listen` realtime)
    confirmed: Callable[[], bool]  # the open turn counts as speech (passed the hold)

    def hold(self) -> None:
        if self.realtime():
            self.replies.hold()

    def release(self) -> None:
        self.replies.release(resume=not self.confirmed())
