"""A board that misbehaves is closed with a reason naming what was wrong, counted in
/metrics (r1voice_transport_errors_total{transport="xiaozhi"}), and another board's
session on the same server goes on."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import numpy as np
import pytest

from app.xiaozhi import framing
from bench.voice.xiaozhi_board import Board, hello

PACKET = bytes([0xF8, 0xFF, 0xFE])  # a valid Opus packet: one 20 ms frame of silence


def errors(address: str, code: str) -> float:
    text = urllib.request.urlopen(f"http://{address}/metrics").read().decode()
    for line in text.splitlines():
        series = line.startswith("r1voice_transport_errors_total")
        if series and f'code="{code}"' in line and 'transport="xiaozhi"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def refused_hello(address: str, message: dict[str, Any]) -> str:
    board = Board(address)
    with pytest.raises(Exception):  # noqa: B017 (the socket closes instead of a hello)
        await board.connect(message)
    return str(board._ws.close_reason)


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (hello(sample_rate=44100), "sample_rate 44100 is not an Opus rate"),
        (hello(format="pcm"), "audio format 'pcm' is not supported"),
        (hello(channels=2), "send mono"),
        (hello(version=7), "protocol version 7 is unknown"),
        ({"type": "listen", "state": "start"}, "the first message must be the device's"),
    ],
)
def test_a_hello_the_server_cannot_honour_is_refused_by_name(
    device_server: str, message: dict[str, Any], reason: str
) -> None:
    before = errors(device_server, "bad_hello")
    assert reason in asyncio.run(refused_hello(device_server, message))
    assert errors(device_server, "bad_hello") == before + 1


def test_a_board_that_never_says_hello_is_closed(device_server: str) -> None:
    async def run() -> str:
        import websockets

        url = f"ws://{device_server}/xiaozhi/v1/?device-id=aa:bb:cc:dd:ee:04"
        async with websockets.connect(url) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 15)
            return str(ws.close_reason)

    before = errors(device_server, "bad_hello")
    assert asyncio.run(run()) == "no hello within 10 s of connecting"
    assert errors(device_server, "bad_hello") == before + 1


def test_opus_before_the_hello_is_refused(device_server: str) -> None:
    async def run() -> str:
        import websockets

        url = f"ws://{device_server}/xiaozhi/v1/?device-id=aa:bb:cc:dd:ee:03"
        async with websockets.connect(url) as ws:
            await ws.send(PACKET)
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
            return str(ws.close_reason)

    assert "binary frame came before the hello" in asyncio.run(run())


V2_WRONG_SIZE = framing.V2.pack(2, 0, 0, 0, 99) + PACKET
V3_WRONG_TYPE = framing.V3.pack(5, 0, len(PACKET)) + PACKET


@pytest.mark.parametrize(
    ("version", "frame", "code", "reason"),
    [
        (2, V2_WRONG_SIZE, "bad_frame", "header says 99 payload bytes; 3 came"),
        (2, b"\x00\x02", "bad_frame", "needs its 16-byte header"),
        (3, V3_WRONG_TYPE, "bad_frame", "unknown frame type 5"),
        (1, json.dumps({"type": "listen"}).encode(), "bad_frame", "JSON came in a binary frame"),
        (1, b"\xff\xfe\x00 not opus", "bad_opus", "Opus packet libopus cannot decode"),
    ],
)
def test_a_bad_frame_closes_only_its_board(
    device_server: str, version: int, frame: bytes, code: str, reason: str
) -> None:
    async def run() -> tuple[str, int]:
        good, bad = Board(device_server), Board(device_server, version=version)
        await good.connect()
        await bad.connect()
        await good.send({"type": "listen", "state": "start", "mode": "auto"})
        await bad.send_binary(frame)
        closed = await bad.closed()
        await good.speak(np.zeros(8000, np.float32), pace=0.2)  # still heard after
        still_open = good._reader is not None and not good._reader.done()
        await good.close()
        return closed, still_open

    before = errors(device_server, code)
    closed, still_open = asyncio.run(run())
    assert reason in closed
    assert still_open
    assert errors(device_server, code) == before + 1


def test_a_flood_of_frames_is_closed(device_server: str) -> None:
    async def run() -> str:
        board = Board(device_server)
        await board.connect()
        for _ in range(400):
            try:
                await board.send_binary(PACKET)
            except Exception:
                break
        return await board.closed()

    assert "far faster than real time" in asyncio.run(run())


def test_text_that_is_not_json_is_refused(device_server: str) -> None:
    async def run() -> str:
        board = Board(device_server)
        await board.connect()
        await board._ws.send("listen, please")
        return await board.closed()

    assert asyncio.run(run()) == "a text message that is not JSON"


def test_an_mcp_reply_that_is_not_json_rpc_is_refused(device_server: str) -> None:
    async def run() -> str:
        board = Board(device_server)
        await board.connect()
        await board.send({"type": "mcp", "payload": {"id": 1, "result": {}}})
        return await board.closed()

    assert "JSON-RPC 2.0" in asyncio.run(run())
