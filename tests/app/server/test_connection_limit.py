"""More connections at once than the server's descriptors hold: every request gets a status
(200, 429 or 503 with Retry-After and a body naming the limit), none a reset. The server
is `r1voice serve` itself, in a process started under a low `ulimit -n`."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from app.server import connection_limit
from app.server.connection_limit import DescriptorLimitError, plan

ROOT = Path(__file__).resolve().parents[3]
FD_LIMIT = 400  # soft and hard: the server cannot raise it
BURST = 600


def test_plan_fits_the_backlog_and_connections_in_the_descriptors() -> None:
    p = plan(fd_limit=400, in_use=21, max_sessions=4, asked=0)
    budget = 400 - 21 - connection_limit.HEADROOM_FDS - 4 * connection_limit.FDS_PER_SESSION
    assert p.backlog == budget // (2 * connection_limit.ACCEPT_ROUNDS)
    assert p.max_connections == budget - connection_limit.ACCEPT_ROUNDS * p.backlog
    assert p.loop == "asyncio"  # a burst can exhaust 400 descriptors: no uvloop
    roomy = plan(fd_limit=1 << 20, in_use=21, max_sessions=64, asked=0)
    assert (roomy.backlog, roomy.loop) == (connection_limit.UVICORN_BACKLOG, "auto")
    assert plan(fd_limit=400, in_use=21, max_sessions=4, asked=50).max_connections == 50


def test_plan_refuses_what_the_descriptors_cannot_hold() -> None:
    with pytest.raises(DescriptorLimitError, match=r"ulimit -n.*R1VOICE_MAX_CONNECTIONS"):
        plan(fd_limit=400, in_use=21, max_sessions=4, asked=1000)
    with pytest.raises(DescriptorLimitError, match="may open 100"):
        plan(fd_limit=100, in_use=21, max_sessions=64, asked=0)
    with pytest.raises(DescriptorLimitError, match="must be >= 0"):
        plan(fd_limit=400, in_use=21, max_sessions=4, asked=-1)


def test_accept_pause_log_says_it_once() -> None:
    pause = connection_limit.AcceptPauseLog(fd_limit=400, every_s=60)

    def record() -> logging.LogRecord:
        return logging.LogRecord(
            "asyncio", logging.ERROR, "", 0, "socket.accept() out of system resource", (), None
        )

    first, second = record(), record()
    assert pause.filter(first) and not pause.filter(second)
    assert first.levelname == "WARNING" and "all 400 file descriptors" in first.getMessage()
    other = logging.LogRecord("asyncio", logging.ERROR, "", 0, "something else", (), None)
    assert pause.filter(other) and other.levelname == "ERROR"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


async def _one(port: int, body: bytes, go: asyncio.Event) -> tuple[str, bytes, bytes]:
    """(status or what happened instead, the response head, its body)."""
    await go.wait()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        rest = await reader.read()
        writer.close()
    except (ConnectionError, asyncio.IncompleteReadError) as exc:
        return type(exc).__name__, b"", b""
    return head.split()[1].decode(), head.lower(), rest


async def _burst(port: int, n: int) -> list[tuple[str, bytes, bytes]]:
    go = asyncio.Event()
    tasks = []
    for i in range(n):
        chat = {
            "model": "r1voice",
            "messages": [{"role": "user", "content": f"Say hi {i}."}],
            "max_tokens": 2,
            "stream": i % 2 == 1,
        }
        tasks.append(asyncio.create_task(_one(port, json.dumps(chat).encode(), go)))
    await asyncio.sleep(0.2)  # every task waits at the gate: they connect at once
    go.set()
    return await asyncio.wait_for(asyncio.gather(*tasks), 240)


def test_a_burst_over_the_descriptor_limit_gets_a_status_for_every_request() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < BURST + 200:  # the client's own sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, BURST + 1000), hard))
    port = _free_port()
    env = {
        **os.environ,
        "R1VOICE_MAX_SESSIONS": "4",
        "R1VOICE_CLIENT_REQUESTS_PER_S": "0",  # the burst comes from one address
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
    command += ["--llm-model", "smollm2-135m-instruct"]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_low_fd_limit,
        )
        try:
            deadline = time.monotonic() + 180
            while True:
                assert server.poll() is None, "the server exited"
                assert time.monotonic() < deadline, "the server never became ready"
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready") as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                time.sleep(0.5)
            results = asyncio.run(_burst(port, BURST))
        finally:
            server.terminate()
            server.wait(30)
            log.seek(0)
            text = log.read().decode("utf-8", "replace")
    counts = collections.Counter(status for status, _, _ in results)
    assert set(counts) <= {"200", "429", "503"}, (counts, text[-3000:])
    assert counts["503"] > 0, counts  # the burst went over the connection limit
    for status, head, body in results:
        if status != "200":
            assert b"\r\nretry-after: " in head, head
            assert body.startswith(b"{"), (status, head, body[:300])
            error = json.loads(body)["error"]
            if status == "503":
                assert error["code"] == "too_many_connections"
                assert "R1VOICE_MAX_CONNECTIONS" in error["message"]
    assert f"ulimit -n {FD_LIMIT}" in text and "event loop asyncio" in text
