"""Streaming transcription of the turn being spoken: partials, agreement, early final.

- Partials: while the user speaks, the audio so far is re-transcribed about every
  second; a word is shown only once two successive passes agree on it (LocalAgreement-2
  from whisper_streaming, Machacek et al. 2023), so the text does not flicker.
- Reuse: the final pass forces the agreed words as Whisper's decoder prefix, so they are
  not decoded again and the final transcript always extends what was shown.
- Start early: when VAD hears the first ~200 ms of silence the final pass starts on the
  audio so far; if the user goes on speaking the result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable

import numpy as np

from app.audio import PIPELINE_RATE
from app.models.asr import WhisperASR

log = logging.getLogger("r1voice.asr")
PARTIAL_INTERVAL_S = 1.0
MIN_PARTIAL_AUDIO_S = 1.0


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("partial transcription failed", exc_info=task.exception())


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


class LocalAgreement:
    """Confirms the longest common word prefix of the last two hypotheses."""

    def __init__(self) -> None:
        self.confirmed: list[str] = []
        self._previous: list[str] = []

    def update(self, hypothesis: str) -> list[str]:
        """Feed a new full hypothesis; returns the words newly confirmed by it."""
        words = hypothesis.split()
        agreed = 0
        for old, new in zip(self._previous, words, strict=False):
            if _norm(old) != _norm(new):
                break
            agreed += 1
        self._previous = words
        if agreed <= len(self.confirmed):
            return []
        fresh = words[len(self.confirmed) : agreed]
        self.confirmed.extend(fresh)
        return fresh

    @property
    def text(self) -> str:
        return " ".join(self.confirmed)


class TurnTranscriber:
    """Transcribes one turn while it is spoken. All ASR passes run off the event loop."""

    def __init__(self, asr: WhisperASR, on_delta: Callable[[str], None]) -> None:
        self.asr = asr
        self.on_delta = on_delta
        self.agreement = LocalAgreement()
        self.paused = False
        self._partials: asyncio.Task[None] | None = None
        self._early: tuple[int, asyncio.Task[str]] | None = None

    def start(self, get_audio: Callable[[], np.ndarray]) -> None:
        self._partials = asyncio.create_task(self._partial_loop(get_audio))
        self._partials.add_done_callback(_log_failure)

    async def _partial_loop(self, get_audio: Callable[[], np.ndarray]) -> None:
        done_at = 0
        while True:
            await asyncio.sleep(0.2)
            audio = get_audio()
            enough = audio.size >= MIN_PARTIAL_AUDIO_S * PIPELINE_RATE
            if (
                self.paused
                or not enough
                or audio.size - done_at < PARTIAL_INTERVAL_S * PIPELINE_RATE
            ):
                continue
            done_at = audio.size
            hypothesis = await asyncio.to_thread(self._transcribe, audio)
            fresh = self.agreement.update(hypothesis)
            if fresh:
                prefix = " " if len(self.agreement.confirmed) > len(fresh) else ""
                self.on_delta(prefix + " ".join(fresh))

    def _transcribe(self, audio: np.ndarray) -> str:
        return self.asr.transcribe(audio, prefix=self.agreement.text or None).text

    def speculate(self, audio: np.ndarray, end_sample: int) -> asyncio.Task[str]:
        """Silence started at `end_sample`: begin the final pass now, in case it lasts."""
        self.paused = True
        self.drop_speculation()
        task = asyncio.create_task(asyncio.to_thread(self._transcribe, audio))
        self._early = (end_sample, task)
        return task

    def resume(self) -> None:
        self.paused = False
        self.drop_speculation()

    def drop_speculation(self) -> None:
        if self._early is not None:
            self._early[1].cancel()  # the thread finishes on its own; its result is dropped
            self._early = None

    async def finish(self, audio: np.ndarray, end_sample: int) -> str:
        """The final transcript: the early pass if it covered exactly this audio."""
        await self.stop_partials()
        if self._early is not None and self._early[0] == end_sample:
            task = self._early[1]
            self._early = None
            return await task
        self.drop_speculation()
        return await asyncio.to_thread(self._transcribe, audio)

    async def stop_partials(self) -> None:
        if self._partials is not None:
            self._partials.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._partials
            self._partials = None

    async def close(self) -> None:
        await self.stop_partials()
        self.drop_speculation()
