"""One executor per model: a model's blocking calls never wait behind another model's.

asyncio's default pool is shared by everything (VAD, ASR, TTS, tokenizers); a 0.6 ms
VAD chunk queued behind six ASR passes waited 244 ms there. Each model gets its own
small pool with a bounded queue instead, and long calls take a `CancelToken` they check
at their chunk boundaries, so work whose caller went away stops early.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
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


class ModelExecutor:
    """Worker threads of one model. `run` is awaited on the event loop; the call runs off it."""

    def __init__(self, name: str, workers: int = 1, max_pending: int = 64) -> None:
        if workers < 1 or max_pending < 1:
            raise ValueError("workers and max_pending must be >= 1")
        self.name = name
        self.max_pending = max_pending
        self._pool = concurrent.futures.ThreadPoolExecutor(
            workers, thread_name_prefix=name, initializer=_name_thread, initargs=(name,)
        )
        self._pending = 0  # calls submitted whose caller still waits (event loop only)

    @property
    def pending(self) -> int:
        return self._pending

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn` on this model's threads. A queued call whose caller is cancelled never
        starts (asyncio cancels the pool's future); a running one ends on its own."""
        if self._pending >= self.max_pending:
            raise ExecutorBusyError(
                f"{self.name}: {self._pending} calls are already queued; retry shortly"
            )
        self._pending += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        finally:
            self._pending -= 1

    async def run_cancellable(self, fn: Callable[[CancelToken], T]) -> T:
        """Like `run`, for calls that check a token at chunk boundaries: a cancelled caller
        sets it, so a call already running stops at its next boundary."""
        token = CancelToken()
        try:
            return await self.run(fn, token)
        except asyncio.CancelledError:
            token.cancel()
            raise

    def submit(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """`fn` on this model's threads, for a caller off the event loop (not counted in
        `pending`): wait with `.result()`, or not at all."""
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _name_thread(name: str) -> None:
    # imported here, not at the top: `engine` brings torch, which a light process that
    # only needs an executor (a transcribing worker) should not load
    from engine.thread_name import set_os_thread_name

    set_os_thread_name(name)
