"""An emulated board holds a spoken conversation through the real pipeline: Mandarin
speech in as real Opus at real-time pace, the transcript (`stt`), the answer as `tts`
start / sentence_start / stop around Opus audio that decodes to speech."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.speech.languages import simplified
from bench.voice.stats import word_errors
from bench.voice.xiaozhi_board import RATE, Board
from tests.conftest import load_clip

CLIP = "zh/funasr_asr_example.wav"
REFERENCE = "欢迎大家来体验达摩院推出的语音识别模型"
OUT_RATE = 24000


def speech(clip: str = CLIP) -> np.ndarray:
    silence = np.zeros(RATE // 2, np.float32)
    return np.concatenate([silence, load_clip(clip, RATE), silence, silence, silence])


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_board_talks_in_mandarin_and_hears_an_answer(device_server: str, version: int) -> None:
    async def talk() -> Board:
        board = Board(device_server, version=version)
        answer = await board.connect()
        assert answer["type"] == "hello" and answer["transport"] == "websocket"
        assert answer["audio_params"]["format"] == "opus"
        await board.send({"type": "listen", "state": "start", "mode": "auto"})
        await board.speak(speech())
        await board.wait_for("tts", "stop", within_s=90)
        await board.close()
        return board

    board = asyncio.run(talk())
    (stt,) = board.of("stt")
    errors, chars = word_errors(REFERENCE, simplified(stt["text"]))
    assert errors / chars < 0.3, stt["text"]
    kinds = [(m["type"], m.get("state")) for m in board.messages if m["type"] != "mcp"]
    assert kinds[0] == ("stt", None)
    assert kinds[1] == ("tts", "start") and kinds[-1] == ("tts", "stop")
    sentences = board.of("tts", "sentence_start")
    assert sentences and all(s["text"] for s in sentences)
    # answered in Chinese (the sentence shown is what is spoken)
    assert any("\u4e00" <= ch <= "\u9fff" for s in sentences for ch in s["text"]), sentences
    assert board.of("llm")[0]["emotion"] in ("neutral", "happy", "sad")
    assert board.frames > 5
    audio = np.frombuffer(bytes(board.pcm), np.int16)
    assert len(audio) / OUT_RATE > 0.5 and np.abs(audio).max() > 1000  # speech, not silence
    assert all(m.get("session_id") for m in board.messages if m["type"] != "hello")
