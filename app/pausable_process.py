"""A worker process its owner can stop at any instant, even inside native code.

Work that only helps (a partial transcript shown while the user speaks) should never
delay work that is needed (the final transcript an answer is made from). A pass already
running inside CTranslate2 cannot be stopped part way from Python, but the kernel can
stop a process: the helping work runs in a child process, which its owner stops
(SIGSTOP) for as long as the needed work runs, so that work has the cores to itself, and
continues (SIGCONT) after. A stopped process takes no CPU and keeps its memory.

The child is `python -m <module>` (not multiprocessing's spawn, which imports the
server's own main module again in the child), started on first use; it answers one
pickled request at a time over its stdin and stdout (`serve`), and dies with the thread
that started it (PR_SET_PDEATHSIG), so a killed server leaves no stopped child behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_NAME = "R1VOICE_WORKER_NAME"
MAX_BACKOFF_S = 60.0


class WorkerProcessError(RuntimeError):
    """The worker process died or failed a request; the next request starts a new one."""


class PausableProcess:
    """`python -m module *args` as a worker that `serve`s requests. `call` is blocking
    and one at a time; `pause`/`resume` may come from any thread, at any point of a call.

    A worker that ended is started again by the next call; one that keeps ending (a model
    that fails to load, a request that crashes it) is started again only after a wait
    that doubles from `backoff_s` up to a minute, and calls before then fail at once:
    loading a Whisper model again for every partial took a core while the user spoke."""

    def __init__(self, name: str, module: str, args: list[str], backoff_s: float = 1.0) -> None:
        self.name = name
        self._backoff_s = backoff_s
        self._deaths = 0  # calls in a row that ended with the process
        self._not_before = 0.0  # time.monotonic() before which no process starts
        self._argv = [sys.executable, "-m", module, *args]
        self._process: subprocess.Popen[bytes] | None = None
        self._calls = threading.Lock()  # one request at a time
        self._state = threading.Lock()  # the process and the pause count
        self._paused = 0
        self._closed = False

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        """Start the child now if it is not running (a call does it anyway). Start it from
        a thread that lives as long as the worker is used: the child dies with the thread
        that started it."""
        self._start()

    def call(self, request: Any) -> Any:
        with self._calls:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                pickle.dump(request, process.stdin)
                process.stdin.flush()
                reply = pickle.load(process.stdout)
            except Exception as exc:  # a dead child, or a reply not read whole: start again
                self._stop()
                self._deaths += 1
                if self._deaths > 1:
                    wait = min(self._backoff_s * 2 ** (self._deaths - 2), MAX_BACKOFF_S)
                    self._not_before = time.monotonic() + wait
                raise WorkerProcessError(
                    f"{self.name}: the worker process ended ({exc!r})"
                ) from exc
            self._deaths = 0
        if isinstance(reply, BaseException):
            raise WorkerProcessError(f"{self.name}: {reply}") from reply
        return reply

    def pause(self) -> None:
        """Stop the child where it is (nested: it runs again after as many `resume`s)."""
        with self._state:
            self._paused += 1
            if self._paused == 1:
                self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        with self._state:
            self._paused = max(0, self._paused - 1)
            if self._paused == 0:
                self._signal(signal.SIGCONT)

    def close(self) -> None:
        """End the child and wait for it (a call in flight fails with WorkerProcessError);
        no call starts another."""
        with self._state:
            self._closed = True
        self._stop()

    def _signal(self, sig: signal.Signals) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, sig)

    def _start(self) -> subprocess.Popen[bytes]:
        with self._state:
            if self._closed:
                raise WorkerProcessError(f"{self.name}: closed")
            if self._process is not None and self._process.poll() is None:
                return self._process
            wait = self._not_before - time.monotonic()
            if wait > 0:
                raise WorkerProcessError(
                    f"{self.name}: the worker process ended {self._deaths} times in a row; "
                    f"it starts again in {wait:.1f} s (see the log for why it ended)"
                )
            env = {**os.environ, "R1VOICE_PARENT_PID": str(os.getpid()), _NAME: self.name}
            self._process = subprocess.Popen(
                self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
            )
            if self._paused:
                self._signal(signal.SIGSTOP)
            return self._process

    def _stop(self) -> None:
        with self._state:
            process, self._process = self._process, None
        if process is None:
            return
        # Killed first (SIGKILL ends a stopped process too): a caller blocked reading the
        # reply holds the pipe's lock, so closing the pipes first could wait forever.
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()


def serve(make_handler: Callable[[], Callable[[Any], Any]]) -> None:
    """The child's side: answer each request read from stdin with `handle(request)` (or
    the error it raised) on stdout, until stdin ends. The child is tied to its parent and
    its stdout kept for the replies before `make_handler()` loads anything (a child
    stopped while it loads would outlive its parent, and what loading prints would break
    the replies); anything printed goes to stderr."""
    parent = int(os.environ.get("R1VOICE_PARENT_PID", "0"))
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # the worker's name for `top -H` and per-thread CPU accounting (threads a native library
        # starts later inherit it)
        libc.prctl(_PR_SET_NAME, os.environ.get(_NAME, "worker").encode()[:15], 0, 0, 0)
    if parent and os.getppid() != parent:  # the parent died before the line above
        return
    requests: IO[bytes] = os.fdopen(os.dup(0), "rb")
    replies: IO[bytes] = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    handle = make_handler()
    while True:
        try:
            request = pickle.load(requests)
        except (EOFError, OSError):
            return
        try:
            reply = pickle.dumps(handle(request))
        except Exception as exc:  # the caller raises it; as a RuntimeError, which unpickles
            reply = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        try:
            replies.write(reply)
            replies.flush()
        except OSError:
            return
