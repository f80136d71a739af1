"""GiveWay: other threads' urgent work holds the engine's steps for a moment.

On a CPU the engine shares its cores with the rest of a voice turn. When the one thing a
listener waits for is another stage's (the first clause's synthesis: nothing is playing
yet), a decode step running beside it takes half the cores and both finish later; the
tokens that step makes are not needed before that audio has played. While a hold is
open the engine takes no step, if it serves at most `ONLY_IF_AT_MOST` requests and none
waits to start: a busy server's requests, and a new request's prefill (another session's
first token), are never paused for one listener. A hold pauses steps for `MAX_HOLD_S` at
most, however long its work runs. The one request paused may be another session's
answer decoding ahead of its audio (the cost: its next tokens a few tens of ms later).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator

MAX_HOLD_S = 0.5
ONLY_IF_AT_MOST = 1  # requests in the engine


class GiveWay:
    def __init__(self, wake: Callable[[], None], clock: Callable[[], float] = time.monotonic):
        self._wake = wake  # the engine loop waits on it: a closed hold resumes it at once
        self._clock = clock
        self._lock = threading.Lock()
        self._until: dict[int, float] = {}  # open holds: id -> when they stop pausing
        self._ids = itertools.count()
        self.holds = 0  # holds opened
        self.paused_steps = 0  # times the loop waited for a hold

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """The engine takes no step while this runs (see the module docstring)."""
        with self._lock:
            key = next(self._ids)
            self._until[key] = self._clock() + MAX_HOLD_S
            self.holds += 1
        try:
            yield
        finally:
            with self._lock:
                del self._until[key]
            self._wake()

    def wait_s(self, running: int, waiting: int) -> float:
        """How long the loop should wait before its next step, with `running` requests
        and `waiting` ones not yet started: 0 when nothing holds it."""
        if running > ONLY_IF_AT_MOST or waiting:
            return 0.0
        with self._lock:
            left = max(self._until.values(), default=0.0) - self._clock()
        if left <= 0:
            return 0.0
        self.paused_steps += 1
        return left
