"""Turn taking for one session: from VAD events to committed user turns and their answers.

The turn being spoken is kept here: its start, its end (by the VAD, the turn model, the
client's commit or clear) and its commit. Each other concern is a controller's, told
what happened: when speech counts (onset.py), speech over an answer (barge_in.py),
continued turns (continuation.py), early answers (early_answers.py), idle nudges
(idle_nudges.py), committed turns (commits.py), the turn model (semantic_end.py), the
answer's prompt computed ahead (priming.py).
It talks to the outside through an event sink and a narrow `ResponseStarter`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field

from app.audio import PIPELINE_RATE
from app.protocol import events
from app.protocol.server_events import SpeechStarted, SpeechStopped, TranscriptionDelta
from app.protocol.session_schema import (
    DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S,
    DEFAULT_IDLE_NUDGES,
    AudioFormat,
    TurnDetection,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink, TurnTiming
from app.realtime.turns.barge_in import BargeIn
from app.realtime.turns.commits import Commits
from app.realtime.turns.continuation import Continuation
from app.realtime.turns.early_answers import EarlyAnswers
from app.realtime.turns.echo import EchoReference
from app.realtime.turns.idle import IdleTimer
from app.realtime.turns.idle_nudges import IdleNudges
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.onset import Onset
from app.realtime.turns.patience import PATIENCE, Patience
from app.realtime.turns.priming import Priming
from app.realtime.turns.semantic_end import SemanticEnd, TurnScorer
from app.realtime.turns.tasks import Tasks
from app.realtime.turns.transcriber import SpeechRecognizer, TurnTranscriber
from app.realtime.turns.turn import (
    ASR_TAIL,
    CommittedTurn,
    OutputHold,
    ResponseStarter,
    SpeechTurn,
    TurnPolicy,
)
from app.realtime.turns.vad_stream import VADEvent


def ms(sample: int) -> int:
    """A stream position (16 kHz samples) as the protocol's milliseconds."""
    return sample * 1000 // PIPELINE_RATE


def _uncounted(_detection: str) -> None:
    pass


@dataclass(kw_only=True)
class TurnCoordinator:
    audio: InputAudio
    asr: SpeechRecognizer
    conversation: Conversation
    responses: ResponseStarter
    emit: EventSink
    policy: TurnPolicy
    turn_detection: TurnDetection | None
    show_transcripts: bool = True
    scorer: TurnScorer | None = None  # the turn model, for semantic_vad
    on_merge: InitVar[Callable[[str], None] | None] = None  # a continued turn, counted
    echo: InitVar[EchoReference | None] = None  # what the client plays: no barge-in
    output: InitVar[OutputHold | None] = None  # the server's own track (WebRTC)
    idle_timer: IdleTimer = field(default_factory=lambda: IdleTimer(DEFAULT_IDLE_NUDGES))
    # no words this long after speech that paused an answer: the answer resumes
    false_interruption_timeout_s: InitVar[float] = DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S
    turn: SpeechTurn | None = field(default=None, init=False)  # the turn being spoken

    def __post_init__(
        self,
        on_merge: Callable[[str], None] | None,
        echo: EchoReference | None,
        output: OutputHold | None,
        false_interruption_timeout_s: float,
    ) -> None:
        self.tasks = Tasks()
        audio, responses, emit = self.audio, self.responses, self.emit
        self.onset = Onset(audio, responses, self.policy.hold, echo)
        self.barge_in = BargeIn(responses, emit, self.tasks, false_interruption_timeout_s, output)
        self.continuation = Continuation(
            self.conversation, responses, emit, self.policy.merge_window, on_merge or _uncounted
        )
        self.commits = Commits(self.conversation, responses, emit, self.barge_in, self.tasks)
        self.early = EarlyAnswers(audio, responses, self.barge_in)
        self.nudges = IdleNudges(self.idle_timer, self.conversation, responses, emit)
        self.priming = Priming(responses, lambda: self.turn, self._responds, self.policy.prime)
        scorer = self.scorer
        self._semantic = (
            SemanticEnd(scorer, self._end_by_model, self.audio.end_pause_after) if scorer else None
        )

    @property
    def semantic(self) -> SemanticEnd | None:
        """The turn-model judge, when semantic_vad is on."""
        td = self.turn_detection
        return self._semantic if td is not None and td.type == "semantic_vad" else None

    async def reconfigure(
        self,
        fmt: AudioFormat,
        turn_detection: TurnDetection | None,
        show_transcripts: bool = True,
        max_idle_nudges: int = DEFAULT_IDLE_NUDGES,
        false_interruption_timeout_s: float = DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S,
    ) -> None:
        """A turn open when VAD is switched off is dropped; its audio stays buffered."""
        self.audio.reconfigure(fmt, turn_detection)
        self.turn_detection = turn_detection
        self.show_transcripts = show_transcripts
        self.idle_timer.max_nudges = max_idle_nudges
        self.barge_in.false_interruption_timeout_s = false_interruption_timeout_s
        if turn_detection is None:
            await self._drop_open_turn()

    # -- audio in -----------------------------------------------------------------------

    async def append(self, audio_b64: str, arrived_at: float | None = None) -> None:
        """One `input_audio_buffer.append` (that reached the server at `arrived_at`)."""
        start = self.audio.end()
        for vad_event in await self.audio.append(audio_b64, arrived_at):
            await self._on_vad(vad_event)
        turn = self.turn
        if turn and await self.onset.passed_hold(turn):
            await self._confirm(turn)
        if turn is not None and turn is self.turn and not turn.confirmed:
            td = self.turn_detection
            heard = self.onset.heard_over_answer(turn)
            self.barge_in.hold_while_heard(heard and td is not None and td.interrupt_response)
        self.barge_in.waited(self.audio.end())
        if self.turn is None:
            self.audio.keep_recent(self.policy.merge_window)
        td = self.turn_detection
        if td is not None and self.idle and not self.responses.responding:  # silence counts
            heard_at = time.monotonic() if arrived_at is None else arrived_at
            if self.nudges.heard(start, self.audio.end(), heard_at, td, self.show_transcripts):
                self.continuation.forget()  # speech after the silence is a turn of its own

    async def _on_vad(self, vad_event: VADEvent) -> None:
        turn = self.turn
        if vad_event.kind == "speech_started":
            item_id = events.new_id("item")
            deltas = functools.partial(self._send_delta, item_id)
            heard = functools.partial(self.priming.heard, item_id)
            transcriber = TurnTranscriber(self.asr, deltas, heard)
            turn = SpeechTurn(item_id, vad_event.sample, transcriber)
            self._set_turn(turn)
            if not (self.onset.must_hold() or self.continuation.continues(turn.start)):
                await self._confirm(turn)
        elif turn is None:
            return
        elif vad_event.kind == "speech_lull" and turn.confirmed:
            self.early.speculate(turn, vad_event.sample, self._responds)
            if judge := self.semantic:  # scored beside the final pass (see prescore)
                audio = self.audio.turn_audio(turn.start, vad_event.sample, turn.carry)
                judge.prescore(turn, vad_event.sample, audio)
        elif vad_event.kind == "speech_paused" and turn.confirmed:
            if turn.interruption is not None:
                turn.interruption.speech_ended(vad_event.sample)
            early = self.early.speculate(turn, vad_event.sample, self._responds)
            if judge := self.semantic:  # the words wait for a real-time client only
                words = early if self.audio.sends_in_real_time() else None
                audio = self.audio.turn_audio(turn.start, vad_event.sample, turn.carry)
                await judge.paused(turn, vad_event.sample, audio, words, self._patience)
        elif vad_event.kind == "speech_resumed":
            self.barge_in.speech_resumed(turn.interruption)
            if self._semantic:
                self._semantic.resumed()
            turn.transcriber.resume()
            await turn.drop_early()
        elif vad_event.kind == "speech_stopped":
            await self._on_stopped(turn, vad_event.sample)

    def _set_turn(self, turn: SpeechTurn | None) -> SpeechTurn | None:
        """`turn` is the one spoken now; the one it replaces (returned) is no longer open."""
        old, self.turn = self.turn, turn
        if old is not None:
            old.open = False
        return old

    def _responds(self) -> bool:
        """Whether a turn's end starts its answer by itself (`create_response`)."""
        td = self.turn_detection
        return bool(td and td.create_response)

    @property
    def _patience(self) -> Patience:
        td = self.turn_detection
        return PATIENCE[td.eagerness if td and td.eagerness else "auto"]

    def speech_counts(self) -> bool:
        """Whether the speech heard now was taken as the user's (it may interrupt)."""
        return self.turn is not None and self.turn.confirmed

    def _send_delta(self, item_id: str, delta: str) -> None:
        if self.show_transcripts:
            self.emit(TranscriptionDelta(item_id=item_id, delta=delta))
        turn = self.turn
        if turn and turn.item_id == item_id:
            self.barge_in.partial(turn.interruption, turn.transcriber.agreement.text)

    async def _confirm(self, turn: SpeechTurn) -> None:
        """Speech that counts: continue the last turn or interrupt the answer, announce it."""
        turn.confirmed = True
        self.idle_timer.user_spoke()
        # Announce first: clients stop playback on speech_started, before anything else.
        self.emit(SpeechStarted(item_id=turn.item_id, audio_start_ms=ms(turn.start)))
        self.onset.announced()  # ... and what they had queued never plays
        detection = self.turn_detection.type if self.turn_detection else "none"
        await self.continuation.continue_into(turn, detection)
        td = self.turn_detection
        if td is not None and td.interrupt_response:
            self.barge_in.pause(turn, self._heard_language)
        self.barge_in.release_output()  # the paused answer's audio is dropped, or none runs
        if turn.transcriber.agreement.confirmed:  # the new item restates the inherited words
            turn.transcriber.on_delta(turn.transcriber.agreement.text)
        turn.transcriber.start(lambda: self.audio.turn_audio(turn.start, carry=turn.carry))

    def _heard_language(self) -> str | None:
        """The language speech over an answer is likely in (its listening prompt's)."""
        return self.asr.fixed_language or self.conversation.heard_language()

    async def _end_by_model(self, turn: SpeechTurn, sample: int) -> None:
        """The turn model heard the utterance complete at the pause that began at `sample`."""
        if self.turn is turn:
            await self.audio.end_speech()
            await self._on_stopped(turn, sample)

    async def _on_stopped(self, turn: SpeechTurn, sample: int) -> None:
        self._set_turn(None)
        if turn.interruption is not None:
            turn.interruption.speech_ended(sample)
        if not turn.confirmed:
            if await self.onset.was_noise(turn, sample):
                self.barge_in.release_output()
                await turn.transcriber.close()
                self.audio.drop_before(sample)
                return
            await self._confirm(turn)
        self.emit(SpeechStopped(item_id=turn.item_id, audio_end_ms=ms(sample)))
        audio, silence_after = self.audio.take_turn(turn.start, sample, turn.carry, ASR_TAIL)
        committed = turn.committed(audio, sample, silence_after, TurnTiming(time.monotonic()))
        self._commit(committed, auto_respond=self._responds())

    # -- commits ------------------------------------------------------------------------

    async def commit_manual(self) -> None:
        self.audio.check_committable()
        self.idle_timer.user_spoke()
        await self._drop_open_turn()
        audio, end = self.audio.take_all()
        item = Item(id=events.new_id("item"), role="user", audio=True)
        transcriber = TurnTranscriber(self.asr, lambda _d: None)
        turn = CommittedTurn(item, audio, end, TurnTiming(time.monotonic()), False, transcriber)
        self._commit(turn, auto_respond=False)

    async def clear(self) -> None:
        """`input_audio_buffer.clear`: the open turn and the chance to continue the last go."""
        await self._drop_open_turn()
        self.audio.clear()
        self.continuation.forget()

    async def _drop_open_turn(self) -> None:
        turn = self._set_turn(None)
        self.barge_in.release_output()
        if turn is not None:
            await turn.drop_early()
            await turn.transcriber.close()
            self.barge_in.ended(turn.interruption, None)

    def _commit(self, turn: CommittedTurn, *, auto_respond: bool) -> None:
        self.commits.commit(turn, auto_respond=auto_respond, show_transcripts=self.show_transcripts)
        self.continuation.committed(turn)

    @property
    def idle(self) -> bool:
        """No turn being spoken, transcribed or about to be answered."""
        return self.turn is None and not self.tasks.running

    async def close(self) -> None:
        """Stop every pass and task of this session's turns; no answer starts after it."""
        self.early.close()
        self.commits.close()
        if self._semantic:
            self._semantic.close()
        await self._drop_open_turn()
        await self.tasks.stop()
