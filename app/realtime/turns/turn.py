"""The state of a turn (spoken now, or committed) and what the coordinator needs of answers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from app.audio import PIPELINE_RATE
from app.realtime.conversation import Item
from app.realtime.handoff import TurnTiming
from app.realtime.turns.interruption import Interruption
from app.realtime.turns.transcriber import TurnTranscriber
from app.settings import Settings

# A final pass hears up to this much of the silence after the speech (as far as heard):
# the VAD's silence start may cut a word's fading end ("France" -> "friend").
ASR_TAIL = PIPELINE_RATE * 200 // 1000


class Answer(Protocol):
    """What the coordinator needs of a started answer."""

    @property
    def done(self) -> bool: ...

    @property
    def early_user_text(self) -> str | None: ...

    @property
    def shown(self) -> bool:
        """Whether the client has been given any of it (text or audio)."""
        ...

    def release(self, timing: TurnTiming, previous_item_id: str | None) -> None: ...

    async def discard(self) -> None: ...

    def resume(self) -> None:
        """Go on with the paused audio, from what the client had heard."""
        ...

    def pause_again(self) -> None:
        """Stop the resumed audio again, without rewinding it (nothing told the client to
        drop what it had queued)."""
        ...

    async def cancel(self, reason: str) -> None: ...


class ResponseStarter(Protocol):
    """What the coordinator needs of the session's responses."""

    @property
    def responding(self) -> bool: ...

    def start(
        self,
        *,
        timing: TurnTiming | None = None,
        early_user_text: str | None = None,
        early_language: str | None = None,
        idle_ms: int | None = None,
    ) -> Answer | None: ...

    async def interrupt(self, reason: str) -> None: ...

    def prime(self, user_text: str, language: str | None) -> None:
        """The words heard so far of a turn still spoken: the LLM may compute ahead."""
        ...

    def pause(self) -> Answer | None:
        """Pause the running answer's audio (speech over it); the answer paused, if any."""
        ...


class OutputHold(Protocol):
    """The server's own audio track (WebRTC), as the coordinator needs it."""

    def hold(self) -> None:
        """Silent at once, keeping what is queued: a sound began over the answer."""
        ...

    def release(self) -> None:
        """Play on from where it held."""
        ...


@dataclass(frozen=True)
class TurnPolicy:
    barge_in_hold_ms: int = 300
    merge_window_ms: int = 1500
    prime: bool = True  # the words heard while the user speaks prime the LLM (priming.py)

    @classmethod
    def of(cls, settings: Settings) -> TurnPolicy:
        return cls(settings.barge_in_hold_ms, settings.turn_merge_window_ms, settings.llm_prime)

    @property
    def hold(self) -> int:
        return self.barge_in_hold_ms * PIPELINE_RATE // 1000

    @property
    def merge_window(self) -> int:
        return self.merge_window_ms * PIPELINE_RATE // 1000


@dataclass
class SpeechTurn:
    """The turn being spoken right now."""

    item_id: str
    start: int  # stream position (16 kHz samples) where speech started
    transcriber: TurnTranscriber
    confirmed: bool = False  # past the barge-in hold, announced with speech_started
    open: bool = True  # still the turn being spoken (not stopped, dropped or replaced)
    carry: tuple[np.ndarray, int] | None = None  # a continued turn: (earlier audio, its end)
    early: Answer | None = None  # answer started on the early transcript, not yet shown
    echo: bool = False  # the speech is our own audio coming back (see note_echo)
    echo_checked_at: int = -(2**62)  # stream position of the last check
    echo_doubt: bool = False  # heard as echo, then one check said otherwise
    interruption: Interruption | None = None  # it paused an answer: its words decide

    def note_echo(self, heard_echo: bool) -> bool:
        """Record an echo check. Speech heard as echo counts as the user's only after two
        checks in a row say so: one window where the answer goes quiet under the room's
        noise scores low by itself."""
        if heard_echo:
            self.echo, self.echo_doubt = True, False
        elif self.echo and not self.echo_doubt:
            self.echo_doubt = True
        else:
            self.echo = False
        return self.echo

    def committed(
        self, audio: np.ndarray, end: int, silence_after: np.ndarray, timing: TurnTiming
    ) -> CommittedTurn:
        """The turn ended at `end` (VAD or turn model): its `audio`, committed."""
        return CommittedTurn(
            Item(id=self.item_id, role="user", audio=True),
            audio,
            end,
            timing,
            vad=True,
            transcriber=self.transcriber,
            early=self.early,
            silence_after=silence_after,
            interruption=self.interruption,
        )

    async def drop_early(self) -> None:
        """Discard the answer started on the early transcript, unseen (speech went on)."""
        early, self.early = self.early, None
        if early is not None:
            await early.discard()


@dataclass
class CommittedTurn:
    """A committed spoken turn; kept so a quick continuation can reopen it."""

    item: Item
    audio: np.ndarray
    end_sample: int
    timing: TurnTiming
    vad: bool
    transcriber: TurnTranscriber
    early: Answer | None = None
    task: asyncio.Task[None] | None = None
    answer: Answer | None = None
    interruption: Interruption | None = None  # it paused an answer: its words decide
    # the silence heard after `audio`, up to ASR_TAIL (the final pass
    # hears it too: see `heard`); not part of the item's audio
    silence_after: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    @property
    def heard(self) -> np.ndarray:
        """What the final pass transcribes: the turn's audio and the silence after it."""
        return np.concatenate([self.audio, self.silence_after])

    def continued_by(self, start: int, merge_window: int) -> bool:
        """Whether speech starting at `start` continues this turn: soon after its end, and
        before its answer showed anything. An answer the client has shown or played stands
        (the client truncates it on barge-in); only an unseen one is deleted with the turn."""
        heard = self.answer is not None and self.answer.shown
        return self.vad and not heard and start - self.end_sample <= merge_window
