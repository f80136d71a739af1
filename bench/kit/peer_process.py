"""PeerProcess: a benchmark peer living in a process of its own, driven over a pipe.

Two CPU runtimes in one process do not measure what either does alone: each thread that
enters torch's OpenMP gets a team of its own, llama.cpp keeps its own thread pool, and
the idle teams spin on the same two cores. Measured here, the engine decoded ~135 tok/s
alone but ~65 with llama.cpp and a second engine loaded in its process; llama.cpp fell
from ~120 to ~73 the same way. Each peer therefore runs in its own (spawned) process and
the benchmark calls its methods in turn, so the rounds stay interleaved and only one
side computes at a time.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


def _serve(conn: Connection, factory: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        peer = factory(*args)
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    while True:
        request = conn.recv()
        if request is None:
            close = getattr(peer, "close", None)
            if close is not None:
                close()
            return
        name, call_args = request
        try:
            conn.send(("ok", getattr(peer, name)(*call_args)))
        except Exception:
            conn.send(("error", traceback.format_exc()))


class PeerProcessError(RuntimeError):
    """The peer failed in its process; the message carries its traceback."""


class PeerProcessCrashed(PeerProcessError):
    """The peer's process died without a word (a segfault in native code, say)."""

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode
        self.signal = None
        if exitcode is not None and exitcode < 0:
            with contextlib.suppress(ValueError):
                self.signal = signal.Signals(-exitcode).name
        how = f"killed by {self.signal}" if self.signal else f"exit code {exitcode}"
        super().__init__(f"peer process crashed ({how})")


class PeerProcess:
    """``factory(*args)`` built in a spawned process; ``peer.method(*args)`` runs there.

    ``factory`` must be importable (a module-level function or class), its arguments and
    results picklable. ``close()`` (or the context manager) ends the process; a call
    that gets no answer within ``timeout_s`` kills it and raises PeerProcessError.
    """

    timeout_s = 1800.0  # the longest one call (a model build, a static batch) may take

    def __init__(self, factory: Callable[..., Any], *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, factory, args), daemon=True)
        self._process.start()
        child.close()
        try:
            self._receive()  # built, or raise why not
        except PeerProcessError:
            self._process.join(timeout=30)
            self._conn.close()
            raise

    def _receive(self) -> Any:
        if not self._conn.poll(self.timeout_s):  # a peer stuck for good: never hang the bench
            self._process.kill()
            self._process.join()
            raise PeerProcessError(f"peer process did not answer within {self.timeout_s:.0f} s")
        try:
            status, value = self._conn.recv()
        except EOFError as exc:
            self._process.join(timeout=30)  # reaped: its exit code says how it died
            raise PeerProcessCrashed(self._process.exitcode) from exc
        if status == "error":
            raise PeerProcessError(value)
        return value

    def call(self, name: str, *args: Any) -> Any:
        """The result of ``peer.name(*args)``, run in the peer's process."""
        self._conn.send((name, args))
        return self._receive()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args: self.call(name, *args)

    def close(self) -> None:
        """End the peer's process (idempotent)."""
        if self._process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
            self._process.join(timeout=30)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._conn.close()

    def __enter__(self) -> PeerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
