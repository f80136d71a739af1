"""Open connections within the file descriptors the process may hold.

uvicorn's event loop (uvloop, i.e. libuv) meets `accept()` failing with EMFILE by
accepting the pending connections on a spare descriptor and closing them at once: their
clients see a reset with no HTTP status. A burst of 1,024 chat requests against a server
started under the common `ulimit -n 1024` lost connections that way. So at start the
soft descriptor limit is raised to the hard one, the accept backlog and the number of
open connections are sized to fit in it (`plan`), and a connection over that number is
answered `503 too_many_connections` with `Retry-After` (`ConnectionLimit`) instead. The
loop accepts a burst faster than it can answer, so no cap keeps a burst off EMFILE: under
a limit a burst could reach (`UVLOOP_MIN_FDS`), the server runs asyncio's own loop, which
on EMFILE leaves the connections queued in the kernel for a second instead of closing them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Collection
from dataclasses import dataclass

from app.server.access import ASGIApp, Receive, Scope, Send, send_refusal

UVICORN_BACKLOG = 2048  # uvicorn's default accept backlog, kept when descriptors allow
# Accepted connections can outrun the loop answering them by a few accept rounds of up to
# `backlog` each (accepted, then read, then answered, then closed): room for this many.
ACCEPT_ROUNDS = 3
HEADROOM_FDS = 64  # files, pipes, logs and the worker processes' pipes opened later
FDS_PER_SESSION = 4  # a WebRTC peer's UDP sockets, beside its signalling connection
MIN_CONNECTIONS = 8
UVLOOP_MIN_FDS = 65536
DRAIN_BYTES = 1 << 20  # a refused request's body read (up to this) so the close is no reset


class DescriptorLimitError(ValueError):
    """The descriptor limit cannot hold the connections asked for."""


@dataclass(frozen=True)
class ConnectionPlan:
    max_connections: int
    backlog: int
    fd_limit: int  # the soft RLIMIT_NOFILE after raising it
    loop: str  # uvicorn's `loop`: "auto" (uvloop when installed) or "asyncio"


def raise_fd_limit() -> int:
    """Raises the soft RLIMIT_NOFILE to the hard one (nothing is lost by it); the result."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return int(soft)


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 32


def plan(fd_limit: int, in_use: int, max_sessions: int, asked: int) -> ConnectionPlan:
    """The backlog and connection cap that fit in `fd_limit` descriptors, `in_use` being
    open already; `asked` (R1VOICE_MAX_CONNECTIONS) > 0 is checked against it, 0 takes
    the most that fits."""
    if asked < 0:
        raise DescriptorLimitError(
            f"R1VOICE_MAX_CONNECTIONS must be >= 0 (0: as many as ulimit -n holds), got {asked}"
        )
    budget = fd_limit - in_use - HEADROOM_FDS - FDS_PER_SESSION * max_sessions
    backlog = max(1, min(UVICORN_BACKLOG, budget // (2 * ACCEPT_ROUNDS)))
    fits = budget - ACCEPT_ROUNDS * backlog
    if fits < max(MIN_CONNECTIONS, asked):
        want = max(MIN_CONNECTIONS, asked)
        need = fd_limit - fits + want
        raise DescriptorLimitError(
            f"{want} open connections need about {need} file descriptors, and this process "
            f"may open {fd_limit} (ulimit -n); raise `ulimit -n` (the hard limit too) or "
            "lower R1VOICE_MAX_CONNECTIONS / R1VOICE_MAX_SESSIONS"
        )
    loop = "auto" if fd_limit >= UVLOOP_MIN_FDS else "asyncio"
    return ConnectionPlan(asked or fits, backlog, fd_limit, loop)


class ConnectionLimit:
    """ASGI middleware, outermost: while more than `limit` connections are open (uvicorn's
    own set, given once the server exists), a request is answered 503 and its connection
    closed; the connections already open are served."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self.connections: Collection[object] = ()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or len(self.connections) <= self.limit:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await receive()  # the handshake's websocket.connect
        else:
            await self._drain(receive)
        message = (
            f"the server has {len(self.connections)} connections open, over its limit of "
            f"{self.limit} (R1VOICE_MAX_CONNECTIONS, bounded by ulimit -n); retry in 1 s"
        )
        error = {"message": message, "type": "server_error", "code": "too_many_connections"}
        headers = [(b"retry-after", b"1"), (b"connection", b"close")]
        if scope["type"] == "http":  # its length known, so the close follows the body
            size = len(json.dumps({"error": {"param": None, **error}}).encode())
            headers.append((b"content-length", str(size).encode()))
        await send_refusal(scope, send, 503, error, headers, close_code=1013)

    @staticmethod
    async def _drain(receive: Receive) -> None:
        read = 0
        while read < DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            read += len(message.get("body", b""))


class AcceptPauseLog(logging.Filter):
    """asyncio logs each EMFILE of `accept()` at ERROR with a traceback (hundreds in one
    burst); what it means (connections wait in the kernel's queue) once per `every_s`."""

    def __init__(self, fd_limit: int, every_s: float = 10.0) -> None:
        super().__init__()
        self.fd_limit, self.every_s, self._last = fd_limit, every_s, -math.inf

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        now = time.monotonic()
        if now - self._last < self.every_s:
            return False
        self._last = now
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg = (
            f"all {self.fd_limit} file descriptors in use (ulimit -n): new connections wait "
            "in the accept queue; raise `ulimit -n` to take more at once"
        )
        record.args, record.exc_info, record.exc_text = (), None, None
        return True

    def install(self) -> None:
        logging.getLogger("asyncio").addFilter(self)


def describe(p: ConnectionPlan) -> str:
    share = math.floor(100 * p.max_connections / max(1, p.fd_limit))
    return (
        f"connections: at most {p.max_connections} open ({share}% of ulimit -n "
        f"{p.fd_limit}), accept backlog {p.backlog}, event loop {p.loop}"
    )
