"""A raw WebSocket client that sends and never reads, as a hostile peer would.

Its socket's receive buffer is tiny (4 KiB) and nothing is ever read from it, so the
server's events back up: first in the kernel's buffers, then in the server's send path.
It sends `session.update` frames whose `instructions` are as long as a session may
have, each echoed back by a `session.updated` the size of the frame. Used by `bench
soak` (memory and time to close) and by the tests of the server's bounds.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import time

RECEIVE_BUFFER = 4096
INSTRUCTIONS_CHARS = 100_000  # the limit of `instructions` (MAX_INSTRUCTIONS_CHARS)


def update_frame(chars: int = INSTRUCTIONS_CHARS) -> bytes:
    """One masked text frame: a session.update with `chars` characters of instructions."""
    event = {"type": "session.update", "session": {"instructions": "x" * chars}}
    return frame(json.dumps(event).encode())


def frame(payload: bytes) -> bytes:
    """A client text frame. The mask key is zero (RFC 6455 asks the client to mask, any
    key is valid), so the payload goes as it is, without a pass over its bytes."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return header + b"\0\0\0\0" + payload


async def open_raw(host: str, port: int, path: str = "/v1/realtime") -> asyncio.StreamWriter:
    """Connect with a 4 KiB receive buffer and finish the WebSocket handshake; returns
    the writer (the reader is never used again, so nothing more is read)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise ConnectionError(f"handshake refused: {head[:80]!r}")
    return writer


async def send_until_stuck(
    writer: asyncio.StreamWriter, frames: int, give_up_s: float, payload: bytes | None = None
) -> dict[str, float | int | str]:
    """Send up to `frames` frames, never reading; stops when a send fails (the server
    closed the connection) or has waited `give_up_s`. Returns what it sent and how it
    ended ("failed": the connection was closed; "stuck": the server stopped reading)."""
    payload = payload or update_frame()
    started = time.monotonic()
    sent, ended = 0, "sent_all"
    for _ in range(frames):
        try:
            writer.write(payload)
            await asyncio.wait_for(writer.drain(), give_up_s)
        except TimeoutError:
            ended = "stuck"
            break
        except (ConnectionError, OSError):
            ended = "failed"
            break
        sent += 1
    return {"frames_sent": sent, "ended": ended, "seconds": round(time.monotonic() - started, 2)}
