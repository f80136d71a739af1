"""Turn taking for one session: from VAD events to committed user turns and their answers.

- Barge-in: speech while an answer plays must last `barge_in_hold` before it counts, so
  a cough or the speaker's own echo does not cut the answer. Until then `speech_started`
  is not sent (clients flush playback on it). Then the answer is paused, not cancelled:
  the speech's words decide (see interruption.py) whether it is cancelled or resumes.
  When the server plays the audio itself (a WebRTC track), the track goes silent as soon
  as such speech starts, not at the hold, and plays on from the same sample if the sound
  proves no barge-in (shorter than the hold, or our own echo).
- Continued turns: speech resuming within `merge_window` of the end of the previous VAD
  turn continues it, unless its answer was already shown or played: that turn and its
  unseen answer are deleted and the whole utterance is transcribed again, so nobody
  answers half a sentence. A clear or a manual commit ends that chance.
- Early answers: at the VAD's lull (see `VADConfig.lull_ms`) the final transcription
  starts; if it is ready before the turn really ends, the answer starts too, held
  unseen (see responses/gate.py) until the committed transcript confirms it.
- Idle nudges: silence of `idle_timeout_ms` after an answer has played out is committed
  as an empty user item and answered (see idle.py).
It talks to the outside through an event sink and a narrow `ResponseStarter`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.audio import PIPELINE_RATE
from app.protocol import events
from app.protocol.schemas import (
    DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S,
    DEFAULT_IDLE_NUDGES,
    AudioFormat,
    TurnDetection,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import EventSink, TurnTiming
from app.realtime.turns.backchannels import listening_prompt
from app.realtime.turns.committed import answer_committed, transcribe_committed
from app.realtime.turns.echo import CHECK_EVERY, WINDOW, EchoReference
from app.realtime.turns.idle import IdleTimer, Silence
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.interruption import Interruption, Verdict
from app.realtime.turns.semantic_end import SemanticEnd, TurnScorer
from app.realtime.turns.transcriber import SpeechRecognizer, TurnTranscriber, stop_task
from app.realtime.turns.turn import (
    Answer,
    CommittedTurn,
    OutputHold,
    ResponseStarter,
    SpeechTurn,
    TurnPolicy,
)
from app.realtime.turns.turn_words import PATIENCE, Patience
from app.realtime.turns.vad_stream import VADEvent

# A final pass hears up to this much of the silence after the speech (as far as heard):
# the VAD's silence start may cut a word's fading end ("France" -> "friend").
ASR_TAIL = PIPELINE_RATE * 200 // 1000
# Speech over an answer with no words by the false-interruption timeout resumes it; a whole
# pass over that speech still running then is waited for this much longer (its words
# decide); past it the ASR is stuck and the answer resumes anyway.
PASS_GRACE_S = 3.0


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
    on_merge: Callable[[str], None] = lambda _detection: None  # a continued turn, counted
    echo: EchoReference | None = None  # what the client plays: our voice is no barge-in
    output: OutputHold | None = None  # the server's own track (WebRTC): silent at onset
    idle_timer: IdleTimer = field(default_factory=lambda: IdleTimer(DEFAULT_IDLE_NUDGES))
    # no words this long after speech that paused an answer: the answer resumes
    false_interruption_timeout_s: float = DEFAULT_FALSE_INTERRUPTION_TIMEOUT_S
    turn: SpeechTurn | None = field(default=None, init=False)  # the turn being spoken
    last: CommittedTurn | None = field(default=None, init=False)  # may still be continued
    # the speech that paused the answer, and that answer, until its words decide
    interruption: Interruption | None = field(default=None, init=False)
    _paused: Answer | None = field(default=None, init=False)
    _applied: Verdict = field(default="wait", init=False)  # what was done to `_paused`
    _cancelling: asyncio.Task[None] | None = field(default=None, init=False)
    _holding: bool = field(default=False, init=False)  # `output` held for the open turn
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
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
        self.false_interruption_timeout_s = false_interruption_timeout_s
        if turn_detection is None:
            await self._drop_open_turn()

    # -- audio in -----------------------------------------------------------------------

    async def append(self, audio_b64: str, arrived_at: float | None = None) -> None:
        """One `input_audio_buffer.append` (that reached the server at `arrived_at`)."""
        start = self.audio.end()
        for vad_event in await self.audio.append(audio_b64, arrived_at):
            await self._on_vad(vad_event)
        turn = self.turn
        if (
            turn
            and not turn.confirmed
            and self.audio.speaking()
            and self.audio.end() - turn.start >= self.policy.hold
            and not await self._heard_echo(turn)
        ):
            await self._confirm(turn)
        if turn is not None and turn is self.turn and not turn.confirmed:
            self._hold_while_heard(turn)
        if self.interruption is not None:
            self._apply(self.interruption.waited(self.audio.end()))
        if self.turn is None:
            self.audio.keep_recent(self.policy.merge_window)
        td = self.turn_detection
        if td is not None and td.idle_timeout_ms is not None and self._quiet:
            heard_at = time.monotonic() if arrived_at is None else arrived_at
            silence = self.idle_timer.heard(start, self.audio.end(), heard_at, td.idle_timeout_ms)
            if silence is not None:
                self._nudge(silence)

    async def _on_vad(self, vad_event: VADEvent) -> None:
        turn = self.turn
        if vad_event.kind == "speech_started":
            item_id = events.new_id("item")
            transcriber = TurnTranscriber(self.asr, functools.partial(self._send_delta, item_id))
            self.turn = turn = SpeechTurn(item_id, vad_event.sample, transcriber)
            if not (self._speaking or self._continues_last(turn)):
                await self._confirm(turn)
        elif turn is None:
            return
        elif vad_event.kind == "speech_lull" and turn.confirmed:
            self._speculate(turn, vad_event.sample)
        elif vad_event.kind == "speech_paused" and turn.confirmed:
            if turn.interruption is not None:
                turn.interruption.speech_ended(vad_event.sample)
            early = self._speculate(turn, vad_event.sample)
            if judge := self.semantic:  # the words wait for a real-time client only
                words = early if self.audio.sends_in_real_time() else None
                audio = self.audio.turn_audio(turn.start, vad_event.sample, turn.carry)
                await judge.paused(turn, vad_event.sample, audio, words, self._patience)
        elif vad_event.kind == "speech_resumed":
            interruption = turn.interruption
            if interruption is not None and interruption.speech_resumed():
                self._pause_again(interruption)
            if self._semantic:
                self._semantic.resumed()
            turn.transcriber.resume()
            await turn.drop_early()
        elif vad_event.kind == "speech_stopped":
            await self._on_stopped(turn, vad_event.sample)

    @property
    def _patience(self) -> Patience:
        td = self.turn_detection
        return PATIENCE[td.eagerness if td and td.eagerness else "auto"]

    @property
    def _speaking(self) -> bool:
        """An answer runs or its audio may still reach the microphone: speech must hold."""
        return self.responses.responding or (self.echo is not None and self.echo.audible())

    async def _heard_echo(self, turn: SpeechTurn) -> bool:
        """Whether the speech heard now is our own audio coming back (the last check's)."""
        echo, now = self.echo, self.audio.end()
        if echo is None or not echo.audible():
            return False
        if now - turn.echo_checked_at >= CHECK_EVERY:
            turn.echo_checked_at = now
            turn.note_echo(await self.audio.check_recent(WINDOW, echo.heard))
        return turn.echo

    def _continues_last(self, turn: SpeechTurn) -> bool:
        return self.last is not None and self.last.continued_by(
            turn.start, self.policy.merge_window
        )

    def _speculate(self, turn: SpeechTurn, sample: int) -> asyncio.Task[str]:
        """Silence began at `sample`: start its final pass (once) and an answer on it."""
        early = turn.transcriber.speculation(sample)
        if early is None:
            audio = self.audio.turn_audio(turn.start, sample, turn.carry, tail=ASR_TAIL)
            early = turn.transcriber.speculate(audio, sample)
            early.add_done_callback(lambda task: self._answer_early(turn, task))
        return early

    def _answer_early(self, turn: SpeechTurn, early: asyncio.Task[str]) -> None:
        """Start a held answer on the early transcript while the silence window runs."""
        td = self.turn_detection
        if self._closed or early.cancelled() or early.exception() is not None:
            return
        text = early.result().strip()
        if turn.interruption is not None and turn.interruption is self.interruption:
            # the decision comes here, at the lull: ~64 ms after the speech, not at its end
            self._apply(turn.interruption.heard(text, turn.transcriber.language))
        if self.turn is not turn or not (td and td.create_response and text):
            return
        if turn.transcriber.paused and not self.responses.responding:
            language = turn.transcriber.language  # what the early pass heard
            turn.early = self.responses.start(early_user_text=text, early_language=language)

    def _send_delta(self, item_id: str, delta: str) -> None:
        if self.show_transcripts:
            self.emit(events.transcription("delta", item_id, delta=delta))
        turn, interruption = self.turn, self.interruption
        if turn and turn.item_id == item_id and interruption and turn.interruption is interruption:
            self._apply(interruption.partial(turn.transcriber.agreement.text))

    # -- speech over an answer -------------------------------------------------------------

    def _hold_while_heard(self, turn: SpeechTurn) -> None:
        """Speech over the answer that has not passed the barge-in hold yet: the server's
        track goes silent at once (an interruption stops the audio ~300 ms sooner than at
        the hold), through gaps shorter than the hold ("Wait, ... stop"), and plays on
        after a gap as long (a cough: the answer waits the cough and the hold, not the VAD's
        silence window, seconds with semantic_vad) or once the speech is our own voice."""
        td = self.turn_detection
        heard = self._speaking and not turn.echo and self.audio.silence() < self.policy.hold
        if not (heard and td is not None and td.interrupt_response):
            self._release_output()
        elif self.output is not None and not self._holding:
            self._holding = True
            self.output.hold()

    def _release_output(self) -> None:
        """The speech was decided on (paused the answer, or was no barge-in): the track
        plays on from where it held, or the resumed answer, later."""
        if self._holding and self.output is not None:
            self._holding = False
            self.output.release()

    def _pause_answer(self, turn: SpeechTurn) -> None:
        """Speech that counts over an answer: pause it until the speech's words decide."""
        answer = self.responses.pause()
        if answer is None:
            return
        timeout = int(self.false_interruption_timeout_s * PIPELINE_RATE)
        grace = int(PASS_GRACE_S * PIPELINE_RATE)
        self.interruption = turn.interruption = Interruption(
            turn.item_id, timeout, grace, turn.transcriber.transcribing
        )
        language = self.asr.fixed_language or self.conversation.heard_language()
        turn.transcriber.prompt = listening_prompt(language)
        self._paused, self._applied = answer, "wait"
        self._tell(turn.interruption)

    def _pause_again(self, interruption: Interruption) -> None:
        """The speech that paused the answer went on after a pass over its start let the
        answer resume: pause it again until the rest's words decide (before, "Wait," heard
        as nothing resumed the answer, which then played over "stop")."""
        answer = self._paused
        if interruption is not self.interruption or answer is None:
            return
        answer.pause_again()
        self._applied = "wait"
        self._tell(interruption)

    def _apply(self, verdict: Verdict) -> None:
        """Do what the decision says to the paused answer (once a verdict)."""
        interruption, answer = self.interruption, self._paused
        if interruption is None or answer is None or verdict == self._applied:
            return
        self._applied = verdict
        if verdict == "interrupt":
            self._cancelling = self._spawn(answer.cancel("turn_detected"), "interrupt")
            self.interruption = self._paused = None
        elif verdict in ("backchannel", "no_words"):
            answer.resume()
        self._tell(interruption)

    def _tell(self, interruption: Interruption) -> None:
        """Our extension event: the answer paused ("wait"), or why it went on or stopped."""
        self.emit(
            events.event(
                "r1voice.interruption", item_id=interruption.item_id, verdict=interruption.verdict
            )
        )

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _end_interruption(
        self, interruption: Interruption | None, words: str | None, language: str | None = None
    ) -> None:
        """The turn that paused the answer is over (`words`: its final transcript, heard in
        `language`; None if it was dropped or failed): decide, and stop waiting."""
        if interruption is None or interruption is not self.interruption:
            return
        self._apply(interruption.heard(words or "", language))
        if self.interruption is interruption:
            self.interruption = self._paused = None

    async def _confirm(self, turn: SpeechTurn) -> None:
        """Speech that counts: continue the last turn or interrupt the answer, announce it."""
        turn.confirmed = True
        self.idle_timer.user_spoke()
        # Announce first: clients stop playback on speech_started, before anything else.
        self.emit(events.speech_edge("started", turn.start, turn.item_id))
        if self.echo is not None:  # ... and what they had queued never plays
            self.echo.stopped()
        last = self.last
        if last is not None and self._continues_last(turn):
            await self._reopen(last)
            turn.carry = (last.audio, last.end_sample)
            turn.transcriber.agreement = last.transcriber.agreement  # agreed words still stand
        td = self.turn_detection
        if td is not None and td.interrupt_response:
            self._pause_answer(turn)
        self._release_output()  # the paused answer's audio is dropped, or none runs
        if turn.transcriber.agreement.confirmed:  # the new item restates the inherited words
            turn.transcriber.on_delta(turn.transcriber.agreement.text)
        turn.transcriber.start(lambda: self.audio.turn_audio(turn.start, carry=turn.carry))

    async def _reopen(self, last: CommittedTurn) -> None:
        self.last = None
        self.on_merge(self.turn_detection.type if self.turn_detection else "none")
        await stop_task(last.task)  # its item becomes ready (empty) at once
        if last.early is not None:
            await last.early.discard()
        if last.answer is not None and not last.answer.done:
            await self.responses.interrupt("turn_detected")
        for removed in self.conversation.delete_from(last.item):
            self.emit(events.item_deleted(removed.id))

    async def _end_by_model(self, turn: SpeechTurn, sample: int) -> None:
        """The turn model heard the utterance complete at the pause that began at `sample`."""
        if self.turn is turn:
            await self.audio.end_speech()
            await self._on_stopped(turn, sample)

    async def _on_stopped(self, turn: SpeechTurn, sample: int) -> None:
        self.turn = None
        if turn.interruption is not None:
            turn.interruption.speech_ended(sample)
        if not turn.confirmed:
            # a cough during an answer, shorter than the hold (one append may hold it all),
            # or our own voice coming back (a short reply just after the answer still counts)
            cough = self.responses.responding and sample - turn.start < self.policy.hold
            if cough or await self._heard_echo(turn):
                self._release_output()
                await turn.transcriber.close()
                self.audio.drop_before(sample)
                return
            await self._confirm(turn)
        self.emit(events.speech_edge("stopped", sample, turn.item_id))
        audio, silence_after = self.audio.take_turn(turn.start, sample, turn.carry, ASR_TAIL)
        td = self.turn_detection
        committed = CommittedTurn(
            Item(id=turn.item_id, role="user", audio=True),
            audio,
            sample,
            TurnTiming(time.monotonic()),
            vad=True,
            transcriber=turn.transcriber,
            early=turn.early,
            silence_after=silence_after,
            interruption=turn.interruption,
        )
        self._commit(committed, auto_respond=bool(td and td.create_response))

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
        self.last = None

    async def _drop_open_turn(self) -> None:
        turn, self.turn = self.turn, None
        self._release_output()
        if turn is not None:
            await turn.drop_early()
            await turn.transcriber.close()
            self._end_interruption(turn.interruption, None)

    def _commit(self, turn: CommittedTurn, *, auto_respond: bool) -> None:
        self._add_audio_item(turn.item)
        turn.task = asyncio.create_task(self._transcribe(turn, auto_respond), name="asr-final")
        self._tasks.add(turn.task)
        turn.task.add_done_callback(self._tasks.discard)
        self.last = turn

    def _add_audio_item(self, item: Item) -> None:
        """A committed stretch of input audio joins the conversation as a user item."""
        previous = self.conversation.add(item)
        self.emit(
            events.event("input_audio_buffer.committed", previous_item_id=previous, item_id=item.id)
        )
        content = [{"type": "input_audio", "transcript": None}]
        self.emit(
            events.item_created(
                previous, events.message_item(item.id, "user", "completed", content)
            )
        )

    @property
    def _quiet(self) -> bool:
        """Nothing is said or answered now: silence counts towards an idle nudge."""
        return self.idle and not self.responses.responding

    def _nudge(self, silence: Silence) -> None:
        """The user stayed silent after an answer (OpenAI's order of events): the silence is
        committed as a user item with an empty transcript (not transcribed: the VAD heard
        no speech in it, and Whisper makes words up from silence), then answered with a
        note that the user said nothing, when `create_response` is on."""
        item = Item(id=events.new_id("item"), role="user", text="", audio=True)
        self.emit(
            events.event(
                "input_audio_buffer.timeout_triggered",
                audio_start_ms=silence.start_ms,
                audio_end_ms=silence.end_ms,
                item_id=item.id,
            )
        )
        self.last = None  # speech after the silence is a turn of its own
        self._add_audio_item(item)
        if self.show_transcripts:
            usage = {"type": "duration", "seconds": silence.ms / 1000}
            self.emit(events.transcription("completed", item.id, transcript="", usage=usage))
        td = self.turn_detection
        if td is not None and td.create_response:
            self.responses.start(idle_ms=silence.ms)

    async def _transcribe(self, turn: CommittedTurn, auto_respond: bool) -> None:
        heard = await transcribe_committed(turn, self.emit if self.show_transcripts else None)
        interruption = turn.interruption
        self._end_interruption(interruption, turn.item.text if heard else None, turn.item.language)
        if interruption is not None and interruption.verdict != "interrupt":
            return  # a backchannel or no words: the answer went on, this is not answered
        cancelling = self._cancelling
        if interruption is not None and cancelling is not None:
            await asyncio.wait([cancelling])  # the old answer ends before the new one starts
        if heard:
            await answer_committed(turn, self.responses, lambda: auto_respond and not self._closed)
        elif turn.early is not None:  # a failed pass answers nothing: its held early answer goes
            early, turn.early = turn.early, None
            await early.discard()

    @property
    def idle(self) -> bool:
        """No turn being spoken, transcribed or about to be answered."""
        return self.turn is None and not self._tasks

    async def close(self) -> None:
        """Stop every pass and task of this session's turns; no answer starts after it."""
        self._closed = True
        if self._semantic:
            self._semantic.close()
        await self._drop_open_turn()
        for task in list(self._tasks):
            await stop_task(task)
