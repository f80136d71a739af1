"""Scripted answers for the turn tests: what the coordinator and its controllers need of
the session's responses (turn.py's `Answer`, `ResponseStarter`, `OutputHold`), recorded."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.realtime.handoff import TurnTiming


@dataclass
class FakeAnswer:
    early_user_text: str | None
    done: bool = False
    released_after: str | None = None
    discarded: bool = False
    shown: bool = False
    paused: bool = False
    resumes: int = 0
    pauses_again: int = 0
    cancelled: str | None = None  # the reason
    idle_ms: int | None = None  # an idle nudge's: the silence it answers

    def release(self, timing: TurnTiming, previous_item_id: str | None) -> None:
        self.released_after = previous_item_id

    async def discard(self) -> None:
        self.discarded, self.done = True, True

    def resume(self) -> None:
        self.paused, self.resumes = False, self.resumes + 1

    def pause_again(self) -> None:
        self.paused, self.pauses_again = True, self.pauses_again + 1

    async def cancel(self, reason: str) -> None:
        self.cancelled, self.done = reason, True


@dataclass
class FakeResponses:
    responding: bool = False
    started: list[FakeAnswer] = field(default_factory=list)
    interrupts: list[str] = field(default_factory=list)
    languages: list[str | None] = field(default_factory=list)  # of each early answer's turn
    primed: list[tuple[str, str | None]] = field(default_factory=list)  # words, language
    playing: FakeAnswer = field(default_factory=lambda: FakeAnswer(None))  # while responding

    def start(
        self,
        *,
        timing: TurnTiming | None = None,
        early_user_text: str | None = None,
        early_language: str | None = None,
        idle_ms: int | None = None,
    ) -> FakeAnswer:
        answer = FakeAnswer(early_user_text, idle_ms=idle_ms)
        self.languages.append(early_language)
        self.started.append(answer)
        return answer

    async def interrupt(self, reason: str) -> None:
        self.interrupts.append(reason)

    def prime(self, user_text: str, language: str | None) -> None:
        self.primed.append((user_text, language))

    def pause(self) -> FakeAnswer | None:
        if not self.responding or self.playing.done:
            return None
        self.playing.paused = True
        return self.playing


@dataclass
class FakeOutput:
    """The server's track (WebRTC): each hold and release, with whether the answer was
    paused by then."""

    responses: FakeResponses
    calls: list[tuple[str, bool]] = field(default_factory=list)

    def hold(self) -> None:
        self.calls.append(("hold", self.responses.playing.paused))

    def release(self) -> None:
        self.calls.append(("release", self.responses.playing.paused))
