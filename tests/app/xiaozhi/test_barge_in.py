"""Barge-in on a board in `realtime` mode: the first sound the session's VAD hears over
an answer stops the board at once (`tts stop`, before `speech_started` would come), and
a sound that proves no barge-in (a cough, shorter than the barge-in hold) lets the answer
play on (`tts start`, the frames the board had not played sent again); speech that
counts drops them and the next turn is answered."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bench.voice.xiaozhi_board import RATE, Board
from tests.conftest import app_with, load_clip, run_live
from tests.fakes import ScriptedLLM

LONG = [f"Sentence number {i} is here, and it goes on for a while. " for i in range(16)]


@pytest.fixture(scope="module")
def address(shared_components: Any) -> Iterator[str]:
    components = dataclasses.replace(shared_components, llm=ScriptedLLM([LONG]))
    yield from run_live(app_with(components, xiaozhi_llm_model="", xiaozhi_asr_model=""))


async def _answering(address: str, shared_components: Any) -> Board:
    """A board in realtime mode, 1.2 s into a long answer."""
    board = Board(address, version=3)
    await board.connect()
    await board.send({"type": "listen", "state": "start", "mode": "realtime"})
    silence = np.zeros(RATE // 2, np.float32)
    spoken = shared_components.tts.synthesize("Tell me a long story.", RATE)
    await board.speak(np.concatenate([silence, spoken, silence, silence, silence]))
    await board.wait_for("tts", "start", within_s=60)
    await board.wait_frames(20)
    return board


def _states(board: Board) -> list[str]:
    return [m["state"] for m in board.of("tts") if m["state"] in ("start", "stop")]


@pytest.mark.timeout(300)
def test_a_cough_stops_the_board_at_once_and_the_answer_plays_on(
    address: str, shared_components: Any
) -> None:
    speech = load_clip("jfk.flac", RATE)
    loud = int(np.argmax(np.abs(speech) > 0.1))  # the first word's onset
    cough = speech[loud : loud + RATE // 8]  # 125 ms of voice: under the 300 ms hold

    async def run() -> tuple[Board, int, int]:
        board = await _answering(address, shared_components)
        await board.speak(np.concatenate([cough, np.zeros(RATE * 2, np.float32)]))
        await board.wait_for("tts", "start", count=2, within_s=30)  # plays on
        resumed_at = board.frames
        await board.wait_frames(resumed_at + 20)
        stopped = len(board.of("tts", "stop"))
        await board.send({"type": "abort"})
        await board.close()
        return board, resumed_at, stopped

    board, resumed_at, stopped = asyncio.run(run())
    assert stopped == 1  # the one stop at the cough, none before the answer went on
    assert _states(board)[:3] == ["start", "stop", "start"]
    assert not board.of("stt")[1:]  # the cough was no turn: only the question was heard
    assert resumed_at > 20


@pytest.mark.timeout(300)
def test_speech_over_the_answer_stops_it_before_speech_started_and_is_answered(
    address: str, shared_components: Any
) -> None:
    barge_in = load_clip("jfk.flac", RATE)[: 3 * RATE]

    async def run() -> Board:
        board = await _answering(address, shared_components)
        talking = asyncio.create_task(
            board.speak(np.concatenate([barge_in, np.zeros(RATE * 2, np.float32)]))
        )
        await board.wait_for("tts", "stop", within_s=30)
        await talking
        await board.wait_for("stt", count=2, within_s=60)
        await board.wait_for("tts", "start", count=2, within_s=60)  # the new answer
        await board.send({"type": "abort"})
        await board.close()
        return board

    board = asyncio.run(run())
    assert _states(board)[:3] == ["start", "stop", "start"]  # no stop twice, no resume first
    assert "fellow" in board.of("stt")[1]["text"].lower()
