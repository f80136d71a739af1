"""Partial passes apart: the words shown while the user speaks never delay the words an
answer is made from.

A partial pass is optional work, a final pass is not, but CTranslate2 cannot stop a pass
part way: on one executor a final that came while a partial ran waited for it, 0.03-0.46 s
for 7 of 10 final passes in `bench voice --language zh` (whisper-base), added to
voice-to-voice. So the partial passes of a model run in a worker process of their own
(`app/speech/partial_asr.py`, the same model loaded again), which is stopped for as long
as a final pass runs (see app/pausable_process.py). A partial whose turn has ended (its
caller cancelled) is not finished: the process is stopped (or stays stopped after the
final) until the next partial is asked for, so that stale rest does not take the cores
from the answer the final pass has just started (its first token came 150-200 ms after
the request instead of 70-130 while the rest ran).

Under load they give way too: the process may be busy at most `MAX_BUSY_SHARE` of the
time (`DutyCycle`), so with several sessions speaking each one's partials come less often
instead of taking a core from the finals, the answers and their audio. Partial passes
were the largest single CPU cost at 6 sessions on 2 cores, above the final passes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from app.executor import ModelExecutor
from app.pausable_process import PausableProcess, WorkerProcessError

log = logging.getLogger("r1voice.asr")
Heard = tuple[str, str, float]  # text, language, seconds of audio
# A lone session's partials (a pass of 0.1-0.3 s every second) stay under it.
MAX_BUSY_SHARE = 0.3


class DutyCycle:
    """Work that may take at most `share` of the time: after a run of t seconds it rests
    t * (1 / share - 1) seconds (a run slowed by load rests longer)."""

    def __init__(self, share: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.share = share
        self.clock = clock
        self._free_at = 0.0

    def ran(self, seconds: float) -> None:
        self._free_at = self.clock() + seconds * (1.0 / self.share - 1.0)

    def resting(self) -> bool:
        return self.clock() < self._free_at


class PartialPasses:
    """One model's partial passes, in their worker process (started on first use)."""

    def __init__(self, model_dir: Path, name: str, threads: int, min_window_s: float) -> None:
        args = [str(model_dir), name, str(threads), str(min_window_s)]
        self.name = name
        self._process = PausableProcess("asr-partial", "app.speech.partial_asr", args)
        self._executor = ModelExecutor("asr-partial", workers=1, max_pending=4)
        self._lock = threading.Lock()
        self._abandoned = False  # the partial in the process now has no caller any more
        self._held = False  # the process was left stopped (one pause held)
        self._running: object | None = None  # the request the process is working on
        self.duty = DutyCycle(MAX_BUSY_SHARE)
        # Started now, in the background, and from the executor's thread, which lives as
        # long as this object: the process dies with the thread that started it.
        self._executor.submit(self._process.start)

    @property
    def pending(self) -> int:
        return self._executor.pending

    def resting(self) -> bool:
        """The last pass was recent enough that the next would exceed MAX_BUSY_SHARE."""
        return self.duty.resting()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    async def run(self, audio_16k: np.ndarray, prefix: str | None, language: str | None) -> Heard:
        self._unhold()
        request = object()
        try:
            return await self._executor.run(self._call, audio_16k, prefix, language, request)
        except asyncio.CancelledError:
            with self._lock:
                self._abandoned = True
                if self._running is request and not self._held:
                    # its turn has ended: the rest of it is not worth the cores the
                    # answer now needs (a final that ended first had let it go on)
                    self._held = True
                    self._process.pause()
            raise

    def warm_up(self, audio_16k: np.ndarray) -> None:
        """Run one pass (blocking): the first user's first partial does not wait for the
        model to load."""
        self._unhold()
        self._executor.submit(self._call, audio_16k, None, None).result()

    def final_started(self) -> None:
        self._process.pause()

    def final_ended(self) -> None:
        with self._lock:
            if self._abandoned and not self._held:
                self._held = True  # this final's pause stays
            else:
                self._process.resume()  # one pause at most is held

    def _unhold(self) -> None:
        """Before a request is queued: a process left stopped goes on (its stale rest
        first), here and not on the executor, which the rest occupies; and what is in
        flight is no longer abandoned, since this request waits behind it."""
        with self._lock:
            self._abandoned = False
            if self._held:
                self._held = False
                self._process.resume()

    def close(self) -> None:
        self._executor.shutdown()
        self._process.close()

    def _call(
        self,
        audio_16k: np.ndarray,
        prefix: str | None,
        language: str | None,
        request: object | None = None,
    ) -> Heard:
        """Partials are optional: if the process failed, this one shows nothing (the next
        starts a new process)."""
        with self._lock:
            self._abandoned = False  # the partial before this one has ended
            self._running = request
        start = self.duty.clock()
        try:
            text, heard, seconds = self._process.call(
                (audio_16k.astype(np.float32), prefix, language)
            )
        except WorkerProcessError:
            log.warning("%s: a partial pass failed", self.name, exc_info=True)
            return "", language or "", 0.0
        finally:
            self.duty.ran(self.duty.clock() - start)
            with self._lock:
                self._running = None
        return text, heard, seconds
