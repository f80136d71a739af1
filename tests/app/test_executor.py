"""Per-model executors: a model's calls never wait behind another model's, queues are
bounded, and work whose caller went away does not run (or stops at its next chunk)."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

from app.executor import CancelToken, ExecutorBusyError, ModelExecutor


def test_one_models_call_does_not_wait_behind_anothers() -> None:
    """Bug: VAD, ASR and TTS shared asyncio's default pool; a VAD chunk waited behind ASR."""

    async def main() -> list[str]:
        asr, vad = ModelExecutor("asr"), ModelExecutor("vad")
        release = threading.Event()
        order: list[str] = []
        slow = [asyncio.create_task(asr.run(release.wait)) for _ in range(3)]
        await vad.run(lambda: order.append(threading.current_thread().name))
        order.append("vad done while asr busy" if not release.is_set() else "late")
        release.set()
        await asyncio.gather(*slow)
        asr.shutdown(), vad.shutdown()
        return order

    names = asyncio.run(main())
    assert names[0].startswith("vad") and names[1] == "vad done while asr busy"


def test_queue_is_bounded() -> None:
    async def main() -> None:
        executor = ModelExecutor("asr", max_pending=2)
        release = threading.Event()
        running = [asyncio.create_task(executor.run(release.wait)) for _ in range(2)]
        await asyncio.sleep(0.01)
        with pytest.raises(ExecutorBusyError, match="asr: 2 calls are already queued"):
            await executor.run(lambda: None)
        release.set()
        await asyncio.gather(*running)
        assert executor.pending == 0
        executor.shutdown()

    asyncio.run(main())


def test_a_cancelled_queued_call_never_runs_and_a_running_one_sees_its_token() -> None:
    async def main() -> tuple[list[str], bool]:
        executor = ModelExecutor("tts")
        started, release = threading.Event(), threading.Event()
        ran: list[str] = []
        seen_cancel: list[bool] = []

        def long_call(token: CancelToken) -> None:
            started.set()
            release.wait()
            seen_cancel.append(token.cancelled)

        first = asyncio.create_task(executor.run_cancellable(long_call))
        await asyncio.to_thread(started.wait)
        queued = asyncio.create_task(executor.run(lambda: ran.append("queued")))
        await asyncio.sleep(0.01)
        first.cancel()
        queued.cancel()
        await asyncio.wait([first, queued])
        release.set()
        await executor.run(lambda: None)  # the worker is free again: everything before ran
        executor.shutdown()
        return ran, seen_cancel[0]

    ran, cancelled = asyncio.run(main())
    assert ran == []  # the queued call was dropped before it started
    assert cancelled  # the running call saw its caller's cancellation


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="workers and max_pending must be >= 1"):
        ModelExecutor("x", workers=0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc: Linux")
def test_a_model_executors_threads_carry_its_name() -> None:
    executor = ModelExecutor("asr", workers=1)

    def comm() -> str:
        return Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()

    try:
        assert asyncio.run(executor.run(comm)) == "asr"  # what /proc and `top -H` show
    finally:
        executor.shutdown()


def test_calls_due_sooner_run_first() -> None:
    """Bug: the TTS executor ran clauses in arrival order, so a new answer's first clause
    waited behind other sessions' later clauses that had seconds of audio still to play."""

    async def main() -> list[str]:
        executor = ModelExecutor("tts")
        started, release = threading.Event(), threading.Event()
        order: list[str] = []

        def busy(_token: CancelToken) -> None:
            started.set()
            release.wait()

        first = asyncio.create_task(executor.run_cancellable(busy))
        await asyncio.to_thread(started.wait)
        later = [
            asyncio.create_task(executor.run_cancellable(lambda _t, n=n: order.append(n), s))
            for n, s in [("fifth clause", 4.0), ("second clause", 0.5)]
        ]
        await asyncio.sleep(0.01)
        now = asyncio.create_task(executor.run(lambda: order.append("first clause")))
        await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(first, *later, now)
        executor.shutdown()
        return order

    assert asyncio.run(main()) == ["first clause", "second clause", "fifth clause"]


def test_a_shut_down_executor_refuses_and_drops_what_waited() -> None:
    async def main() -> None:
        executor = ModelExecutor("asr")
        started, release = threading.Event(), threading.Event()
        running = asyncio.create_task(executor.run(lambda: (started.set(), release.wait())))
        await asyncio.to_thread(started.wait)
        waiting = asyncio.create_task(executor.run(lambda: None))
        await asyncio.sleep(0.01)
        executor.shutdown()
        release.set()
        await running  # a call already running ends on its own
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with pytest.raises(RuntimeError, match="asr: the executor is shut down"):
            await executor.run(lambda: None)

    asyncio.run(main())
