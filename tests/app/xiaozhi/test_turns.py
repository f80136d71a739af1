"""The listening modes of a board: `realtime` (it keeps streaming while the answer
plays, and speech over the answer stops it), `manual` (its button ends the turn: no
VAD), and `abort`. The answers are scripted so that they are long enough to cut."""

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
SHORT = ["The capital ", "of France ", "is Paris."]
FULL_ANSWER_FRAMES = 300  # LONG is far more than 18 s of speech (60 ms frames)


@pytest.fixture(scope="module")
def scripted(shared_components: Any) -> Iterator[str]:
    llm = ScriptedLLM([LONG, SHORT])
    components = dataclasses.replace(shared_components, llm=llm)
    yield from run_live(app_with(components, xiaozhi_llm_model="", xiaozhi_asr_model=""))


async def said(board: Board, word: str) -> None:
    """Until a sentence of an answer with `word` in it has been announced."""
    while not any(word in m["text"] for m in board.of("tts", "sentence_start")):
        await board.wait_for(
            "tts", "sentence_start", count=len(board.of("tts", "sentence_start")) + 1
        )


def question(shared_components: Any) -> np.ndarray:
    silence = np.zeros(RATE // 2, np.float32)
    spoken = shared_components.tts.synthesize("Tell me a long story.", RATE)
    return np.concatenate([silence, spoken, silence, silence, silence])


def test_speech_over_the_answer_stops_it_in_realtime_mode(
    scripted: str, shared_components: Any
) -> None:
    barge_in = load_clip("jfk.flac", RATE)[: 3 * RATE]
    silence = np.zeros(RATE, np.float32)

    async def run() -> tuple[Board, int, int]:
        board = Board(scripted, version=2)
        await board.connect()
        await board.send({"type": "listen", "state": "start", "mode": "realtime"})
        await board.speak(question(shared_components))
        await board.wait_for("tts", "start", within_s=60)
        await board.wait_frames(20)  # 1.2 s of the answer heard
        at_barge_in = board.frames
        talking = asyncio.create_task(board.speak(np.concatenate([barge_in, silence, silence])))
        await board.wait_for("tts", "stop", within_s=30)
        at_stop = board.frames
        await talking
        # the next turn's answer, said to its end (a second "stop" alone may still be the
        # first answer's: paused by the speech over it, then stopped)
        await asyncio.wait_for(said(board, "Paris"), 60)
        await board.wait_for("tts", "stop", count=len(board.of("tts", "stop")) + 1)
        await board.close()
        return board, at_barge_in, at_stop

    board, at_barge_in, at_stop = asyncio.run(run())
    assert at_stop < FULL_ANSWER_FRAMES  # cut off, not played out
    assert at_stop - at_barge_in < 3 * 1000 // 60 + 10  # within the speech over it
    assert "fellow" in board.of("stt")[-1]["text"].lower()
    assert "Paris" in " ".join(s["text"] for s in board.of("tts", "sentence_start"))


def test_the_button_ends_the_turn_in_manual_mode(scripted: str, shared_components: Any) -> None:
    async def run() -> Board:
        board = Board(scripted)
        await board.connect()
        await board.send({"type": "listen", "state": "start", "mode": "manual"})
        await board.speak(question(shared_components)[: RATE * 2])  # no pause after it
        await board.send({"type": "listen", "state": "stop"})
        await board.wait_for("tts", "start", within_s=60)
        await board.send({"type": "abort", "reason": "wake_word_detected"})
        await board.wait_for("tts", "stop", within_s=10)
        frames = board.frames
        await asyncio.sleep(1.0)
        assert board.frames - frames < 10  # what was on the wire, at most
        await board.close()
        return board

    board = asyncio.run(run())
    assert "story" in board.of("stt")[0]["text"].lower()
    assert board.frames < FULL_ANSWER_FRAMES
