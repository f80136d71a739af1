"""The worker process its owner stops while needed work runs (app/pausable_process.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from app.pausable_process import PausableProcess, WorkerProcessError

WORKER = "tests.app.pausable_worker"


@pytest.fixture
def worker() -> Iterator[PausableProcess]:
    process = PausableProcess("test-worker", WORKER, [])
    yield process
    process.close()


def _stat(pid: int) -> tuple[str, int]:
    """The process's state letter and its CPU time so far (clock ticks)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def _until(check, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.01)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = _stat(pid)[0] if os.path.exists(f"/proc/{pid}/stat") else "X"
    return state not in ("Z", "X")


def test_replies_come_back_in_order_and_printing_does_not_break_them(
    worker: PausableProcess,
) -> None:
    assert worker.pid is None  # started on first use
    assert worker.call(("echo", [1, "二"])) == [1, "二"]
    assert worker.call(("print", "after")) == "after"
    assert worker.pid is not None
    with open(f"/proc/{worker.pid}/comm") as comm:
        assert comm.read().strip() == "test-worker"  # what top -H and bench capacity see


def test_a_failed_request_raises_in_the_caller_and_the_worker_goes_on(
    worker: PausableProcess,
) -> None:
    with pytest.raises(WorkerProcessError, match="unknown request 'nope'"):
        worker.call(("nope", None))
    assert worker.call(("echo", 7)) == 7


def test_a_worker_that_died_is_named_and_the_next_call_starts_another(
    worker: PausableProcess,
) -> None:
    worker.call(("echo", 1))
    first = worker.pid
    with pytest.raises(WorkerProcessError, match="the worker process ended"):
        worker.call(("exit", 3))
    assert worker.call(("echo", 2)) == 2
    assert worker.pid not in (None, first)


def test_a_paused_worker_takes_no_cpu_until_resumed(worker: PausableProcess) -> None:
    worker.call(("echo", 0))
    pid = worker.pid
    assert pid is not None
    replies: list[object] = []
    call = threading.Thread(target=lambda: replies.append(worker.call(("spin", 1.0))))
    call.start()
    assert _until(lambda: _stat(pid)[1] > 0 and _stat(pid)[0] == "R")
    worker.pause()
    worker.pause()  # nested: one resume is not enough
    assert _until(lambda: _stat(pid)[0] == "T")
    ticks = _stat(pid)[1]
    time.sleep(0.3)
    worker.resume()
    assert _stat(pid) == ("T", ticks)  # stopped: no CPU time, still one pause to undo
    worker.resume()
    call.join(timeout=30)
    assert replies == ["spun"]


def test_closing_a_paused_worker_ends_it(worker: PausableProcess) -> None:
    worker.call(("echo", 0))
    pid = worker.pid
    assert pid is not None
    worker.pause()
    assert _until(lambda: _stat(pid)[0] == "T")
    worker.close()
    assert not _alive(pid)
    with pytest.raises(WorkerProcessError, match="closed"):
        worker.call(("echo", 1))  # a closed worker starts no other


def test_the_worker_dies_with_its_parent() -> None:
    """A killed server leaves no worker behind (stopped or not)."""
    parent = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "from app.pausable_process import PausableProcess\n"
            f"w = PausableProcess('orphan', {WORKER!r}, [])\n"
            "w.call(('echo', 0)); w.pause(); print(w.pid, flush=True); os._exit(0)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    child = int(parent.stdout.split()[-1])
    assert _until(lambda: not _alive(child))


def test_a_worker_that_keeps_dying_is_started_again_only_after_a_wait() -> None:
    """A worker that died on every request was started again for every call (a Whisper
    model loaded again for every partial). From the second death in a row the next
    start waits (doubling); calls before then fail at once and start nothing."""
    worker = PausableProcess("test-worker", WORKER, [], backoff_s=0.3)
    try:
        for _ in range(2):
            with pytest.raises(WorkerProcessError, match="the worker process ended"):
                worker.call(("exit", 3))
        with pytest.raises(WorkerProcessError, match="ended 2 times in a row; it starts again"):
            worker.call(("echo", 1))
        assert worker.pid is None  # nothing was started
        assert _until(lambda: _call_or_none(worker, 1) == 1)  # after the wait, it works
        with pytest.raises(WorkerProcessError, match="the worker process ended"):
            worker.call(("exit", 3))
        assert worker.call(("echo", 2)) == 2  # a reply reset the count: no wait after one
    finally:
        worker.close()


def _call_or_none(worker: PausableProcess, value: int) -> int | None:
    try:
        return int(worker.call(("echo", value)))
    except WorkerProcessError:
        return None
