"""The board's MCP tools are the session's function tools: listed over paged
tools/list, called as tools/call when the user asks, the answer saying what happened;
a board that refuses the call or never answers gets a spoken apology, not a hung turn."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from bench.voice.xiaozhi_board import RATE, VOLUME_TOOL, Board
from tests.conftest import app_with, run_live


async def ask(board: Board, text: str) -> None:
    """What the board's wake word detector heard: it starts a turn."""
    await board.connect()
    await board.send({"type": "listen", "state": "detect", "text": text})
    await board.wait_for("tts", "stop", within_s=120)


def spoken(board: Board) -> str:
    return " ".join(s["text"] for s in board.of("tts", "sentence_start"))


@pytest.mark.parametrize("text", ["把音量调到30。", "Turn the volume down to 30."])
def test_asking_for_the_volume_calls_the_boards_speaker(device_server: str, text: str) -> None:
    async def run() -> Board:
        board = Board(device_server)
        await ask(board, text)
        await board.close()
        return board

    board = asyncio.run(run())
    assert [c["name"] for c in board.calls][:1] == [VOLUME_TOOL["name"]], board.messages
    assert board.volume == 30
    assert spoken(board)


@pytest.mark.parametrize("behaviour", ["error", "silent"])
def test_a_board_that_fails_the_call_gets_an_apology(
    shared_components: Any, behaviour: str
) -> None:
    async def run(address: str) -> Board:
        board = Board(address, mcp=behaviour)
        await ask(board, "Turn the volume down to 30.")
        await board.close()
        return board

    for address in run_live(app_with(shared_components, mcp_timeout_s=2.0)):
        board = asyncio.run(run(address))
    assert [c["name"] for c in board.calls] == [VOLUME_TOOL["name"]]
    assert board.volume == 70  # unchanged
    words = spoken(board).lower()
    assert any(w in words for w in ("sorry", "apolog", "抱歉", "对不起", "unable", "not")), words
    assert board.of("tts", "stop")  # the turn ended: the board listens again


def test_the_volume_tool_is_called_by_voice(device_server: str, shared_components: Any) -> None:
    """A spoken request (synthesized: no human recording asks for the volume) at real-time
    pace, heard by whisper-base, the call made by Qwen2.5-Coder-0.5B."""
    question = shared_components.tts.synthesize("Turn the volume down to thirty.", RATE)
    silence = np.zeros(RATE // 2, np.float32)

    async def run() -> Board:
        board = Board(device_server, version=3)
        await board.connect()
        await board.wait_for("mcp", count=3)  # initialize and two pages of tools/list
        await board.send({"type": "listen", "state": "start", "mode": "auto"})
        await board.speak(np.concatenate([silence, question, silence, silence, silence]))
        await board.wait_for("tts", "stop", within_s=120)
        await board.close()
        return board

    board = asyncio.run(run())
    assert "volume" in board.of("stt")[0]["text"].lower()
    assert [c["name"] for c in board.calls] == [VOLUME_TOOL["name"]]
    assert board.volume < 70
    assert spoken(board)
