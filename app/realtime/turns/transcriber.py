"""Streaming transcription of the turn being spoken: partials, agreement, early final.

- Partials: while the user speaks, the audio so far is re-transcribed about every
  second; a word is shown once two successive passes agree on it (LocalAgreement).
  Partials are optional work: a pass is skipped while the ASR model is busy (another
  session's final pass goes first) and they stop past Whisper's 30 s window.
- The final pass decides the words alone: it hears the whole turn with no forced
  prefix (an early wrong guess agreed twice could never be corrected, and
  faster-whisper applies a prefix only to the first 30 s window: long turns came out
  with repeated sentences). Partial passes use the agreed words as a prefix, for
  stable display.
- Context: a turn that follows the last one closely (see continuation.py) is decoded
  with that turn's words (and the ones it followed) as Whisper's initial prompt: a
  sentence cut by a pause goes on from its first half. The ASR drops a context that
  misleads the pass.
- Start early: at the VAD's lull (see `VADConfig.lull_ms`) the final pass starts on the
  audio so far; if the user goes on speaking it is cancelled (and stops at its next
  segment on the ASR thread).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

import numpy as np

from app.audio import PIPELINE_RATE
from app.realtime.turns.agreement import LocalAgreement
from app.speech.asr import Transcript
from app.speech.whisper_decoding import context_prompt

log = logging.getLogger("r1voice.asr")
PARTIAL_INTERVAL_S = 1.0
PARTIAL_POLL_S = 0.2  # how often the partial loop looks for new audio
MIN_PARTIAL_AUDIO_S = 1.0
MAX_PARTIAL_AUDIO_S = 30.0  # Whisper's window: longer audio is only transcribed at the end


class SpeechRecognizer(Protocol):
    """What a transcriber needs of an ASR model (WhisperASR, or a scripted one in tests)."""

    @property
    def busy(self) -> bool: ...

    @property
    def fixed_language(self) -> str | None:
        """The language every pass is in (the session's, or the model's only one); None:
        detected per pass."""
        ...

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript: ...

    async def partial(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        """A pass whose words are only shown (optional work: a loop is dropped, not redone)."""
        ...


async def stop_task(task: asyncio.Task[object] | None) -> None:
    """Cancel `task` and wait until it ended; the caller's own cancellation propagates."""
    if task is not None and not task.done():
        task.cancel()
        await asyncio.wait([task])


class TurnTranscriber:
    """Transcribes one turn while it is spoken. All ASR passes run on the ASR executor."""

    def __init__(
        self,
        asr: SpeechRecognizer,
        on_delta: Callable[[str], None],
        on_heard: Callable[[str, str | None], None] = lambda _text, _language: None,
    ) -> None:
        self.asr = asr
        self.on_delta = on_delta
        self.on_heard = on_heard  # each partial pass's whole text, and its language
        self.agreement = LocalAgreement()
        self.language: str | None = None  # what the last final pass heard
        self.paused = False
        self.prompt: str | None = None  # Whisper's prompt for final passes
        # the turn this one follows closely (its words are the context), until it is read
        self.before: TurnTranscriber | None = None
        self.context: str | None = None  # the words before this turn, once read
        self.text: str | None = None  # what the last final pass heard
        self._partials: asyncio.Task[None] | None = None
        self._early: tuple[int, asyncio.Task[str]] | None = None
        self._final_passes = 0  # running now (an early one, and the one finish awaits)

    def start(self, get_audio: Callable[[], np.ndarray]) -> None:
        self._partials = asyncio.create_task(self._partial_loop(get_audio), name="asr-partials")
        self._partials.add_done_callback(_log_failure)

    async def _partial_loop(self, get_audio: Callable[[], np.ndarray]) -> None:
        done_at = 0
        while True:
            await asyncio.sleep(PARTIAL_POLL_S)
            audio = get_audio()
            if (
                self.paused
                or self.asr.busy
                or audio.size < MIN_PARTIAL_AUDIO_S * PIPELINE_RATE
                or audio.size > MAX_PARTIAL_AUDIO_S * PIPELINE_RATE
                or audio.size - done_at < PARTIAL_INTERVAL_S * PIPELINE_RATE
            ):
                continue
            done_at = audio.size
            before = self.agreement.text
            partial = await self.asr.partial(audio, prefix=before or None)
            if self.agreement.update(partial.text):
                # the joined text only grows: the delta is what the new units add to it,
                # with a space before them or not as the scripts want ("我想" + "去")
                self.on_delta(self.agreement.text[len(before) :])
            if not self.paused:  # once the final pass began, its answer primes itself
                self.on_heard(partial.text, partial.language or None)

    async def _transcribe(self, audio: np.ndarray) -> str:
        """A final pass: the whole turn, no forced prefix."""
        self._final_passes += 1
        try:
            context = self.words_before()
            transcript = await self.asr.run(audio, prompt=self.prompt, context=context)
        finally:
            self._final_passes -= 1
        self.language = transcript.language or None
        self.text = transcript.text
        return transcript.text

    def words_before(self) -> str | None:
        """The words of the turns this one goes on from (None: it follows none). Read
        once, when known: the turn before lets go of its own."""
        before = self.before
        if before is None:
            return self.context
        if before.text is None:  # its final pass is still running: what came before it
            return context_prompt(before.words_before())
        self.context = context_prompt(before.words_before(), before.text)
        self.before = None
        return self.context

    def speculate(self, audio: np.ndarray, end_sample: int) -> asyncio.Task[str]:
        """Silence started at `end_sample`: begin the final pass now, in case it lasts."""
        self.paused = True
        self.drop_speculation()
        task = asyncio.create_task(self._transcribe(audio), name="asr-early")
        self._early = (end_sample, task)
        return task

    def transcribing(self) -> bool:
        """Whether a final pass over this turn runs now (its words are coming)."""
        early = self._early is not None and not self._early[1].done()  # started or about to
        return early or self._final_passes > 0

    def speculation(self, end_sample: int) -> asyncio.Task[str] | None:
        """The final pass running on the audio up to `end_sample`, if one is."""
        if self._early is not None and self._early[0] == end_sample:
            return self._early[1]
        return None

    def resume(self) -> None:
        self.paused = False
        self.drop_speculation()

    def drop_speculation(self) -> None:
        if self._early is not None:
            self._early[1].cancel()  # stops the ASR pass at its next segment
            self._early = None

    async def finish(self, audio: np.ndarray, end_sample: int) -> str:
        """The final transcript: the early pass if it covered exactly this audio."""
        await stop_task(self._partials)
        self._partials = None
        if self._early is not None and self._early[0] == end_sample:
            task = self._early[1]
            self._early = None
            return await task
        self.drop_speculation()
        return await self._transcribe(audio)

    async def close(self) -> None:
        """Stop every pass of this turn (partials and the early final)."""
        await stop_task(self._partials)
        self._partials = None
        if self._early is not None:
            early = self._early[1]
            self._early = None
            await stop_task(early)  # type: ignore[arg-type]


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("partial transcription failed", exc_info=task.exception())
