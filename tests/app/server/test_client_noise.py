"""A text frame that is not UTF-8 closes the connection with 1007 and logs one line,
not an ERROR with a traceback (a real uvicorn, a raw socket)."""

from __future__ import annotations

import base64
import logging
import os
import socket
import time

from app.server.client_noise import UVICORN_LOGGER


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_invalid_utf8_logs_one_line_without_a_traceback(live_server: str) -> None:
    """Bug: each such frame logged an uvicorn ERROR with a traceback."""
    host, port = live_server.split(":")
    records = Records()
    logger = logging.getLogger(UVICORN_LOGGER)
    logger.addHandler(records)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall(
                f"GET /v1/realtime HTTP/1.1\r\nHost: {live_server}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n".encode()
            )
            assert b" 101 " in sock.recv(4096).split(b"\r\n", 1)[0]
            payload = b'{"type": "x\xff\xfe"}'
            sock.sendall(bytes([0x81, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
            received = b""
            while b"\x88" not in received:  # frames until the close frame
                chunk = sock.recv(65536)
                assert chunk, "closed without a close frame"
                received += chunk
        close = received[received.index(b"\x88") :]
        assert int.from_bytes(close[2:4], "big") == 1007
        deadline = time.monotonic() + 5
        while not records.records and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        logger.removeHandler(records)
    assert records.records, "nothing was logged"
    assert all(r.levelno < logging.WARNING and r.exc_info is None for r in records.records), [
        (r.levelname, r.getMessage()) for r in records.records
    ]
    assert any("UTF-8" in r.getMessage() for r in records.records)
