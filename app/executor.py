"""One executor per model: a model's blocking calls never wait behind another model's.

asyncio's default pool is shared by everything (VAD, ASR, TTS, tokenizers); a 0.6 ms
VAD chunk queued behind six ASR passes waited 244 ms there. Each model gets its own
small pool with a bounded queue instead, and long calls take a `CancelToken` they check
at their chunk boundaries, so work whose caller went away stops early.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class ExecutorBusyError(RuntimeError):
    """Too many calls are already queued for this model; the caller should skip or retry."""


class CancelToken:
    """Set when the caller of a blocking call was cancelled; the call checks it between chunks."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


class DeadlinePool:
    """Worker threads that take calls earliest deadline first (in arrival order among
    equal ones): a call due now goes before one whose result is needed only later, such
    as an answer's next clause while the listener still has seconds of audio."""

    def __init__(self, name: str, workers: int) -> None:
        self.name, self.workers = name, workers
        self._heap: list[tuple[float, int, Callable[[], object], Future]] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, deadline: float, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError(f"{self.name}: the executor is shut down")
            heapq.heappush(self._heap, (deadline, next(self._order), fn, future))
            if len(self._threads) < self.workers:  # started on first use, as a pool's are
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            self._ready.notify()
        return future

    def _work(self) -> None:
        _name_thread(self.name)
        while True:
            with self._ready:
                while not self._heap and not self._closed:
                    self._ready.wait()
                if not self._heap:
                    return
                *_, fn, future = heapq.heappop(self._heap)
            if not future.set_running_or_notify_cancel():
                continue  # its caller went away while it waited
            try:
                result = fn()
            except BaseException as exc:  # handed to the caller, as a thread pool does
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self) -> None:
        """Drop what waits; a call running ends on its own, then its thread exits."""
        with self._ready:
            self._closed = True
            for *_, future in self._heap:
                future.cancel()
            self._heap.clear()
            self._ready.notify_all()


class ModelExecutor:
    """Worker threads of one model. `run` is awaited on the event loop; the call runs off it."""

    def __init__(self, name: str, workers: int = 1, max_pending: int = 64) -> None:
        if workers < 1 or max_pending < 1:
            raise ValueError("workers and max_pending must be >= 1")
        self.name = name
        self.max_pending = max_pending
        self._pool = DeadlinePool(name, workers)
        self._pending = 0  # calls submitted whose caller still waits (event loop only)

    @property
    def pending(self) -> int:
        return self._pending

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn` on this model's threads, due now. A queued call whose caller is
        cancelled never starts; a running one ends on its own."""
        return await self._run(0.0, functools.partial(fn, *args, **kwargs))

    async def run_cancellable(self, fn: Callable[[CancelToken], T], slack_s: float = 0.0) -> T:
        """Like `run`, for calls that check a token at chunk boundaries: a cancelled caller
        sets it, so a call already running stops at its next boundary. `slack_s`: how
        long its result can wait; calls due sooner go first."""
        token = CancelToken()
        try:
            return await self._run(slack_s, functools.partial(fn, token))
        except asyncio.CancelledError:
            token.cancel()
            raise

    async def _run(self, slack_s: float, call: Callable[[], T]) -> T:
        if self._pending >= self.max_pending:
            raise ExecutorBusyError(
                f"{self.name}: {self._pending} calls are already queued; retry shortly"
            )
        self._pending += 1
        try:
            deadline = time.monotonic() + max(0.0, slack_s)
            # a cancelled await cancels the pool's future: a call still queued never runs
            return await asyncio.wrap_future(self._pool.submit(deadline, call))
        finally:
            self._pending -= 1

    def submit(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """`fn` on this model's threads, for a caller off the event loop (not counted in
        `pending`): wait with `.result()`, or not at all."""
        return self._pool.submit(time.monotonic(), functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        self._pool.shutdown()


def _name_thread(name: str) -> None:
    # imported here, not at the top: `engine` brings torch, which a light process that
    # only needs an executor (a transcribing worker) should not load
    from engine import set_os_thread_name

    set_os_thread_name(name)
