"""A session's language (`input_audio_transcription.language`): refused by name when the
ASR model cannot transcribe it, detected per turn when unset, reported with the
transcript; a Mandarin speaker is transcribed in simplified characters and answered in
Chinese by a Mandarin voice."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import (
    AudioDelta,
    AudioTranscriptDelta,
    SessionUpdated,
    TranscriptionCompleted,
)
from app.protocol.session_schema import SEMANTIC_MAX_WAIT_MS
from app.speech.languages import simplified
from bench.voice.stats import word_errors
from tests.conftest import client_with, is_done, load_clip, receive_until, stream_audio

TRANSCRIBED = TranscriptionCompleted.TYPE
QWEN = "qwen2.5-coder-0.5b-instruct"
CLIP = "zh/funasr_asr_example.wav"
REFERENCE = "欢迎大家来体验达摩院推出的语音识别模型"


def _update(ws: Any, session: dict[str, Any]) -> list[dict[str, Any]]:
    """Send a `session.update`; the events up to its one reply (`session.updated`, or
    an `error` when it is refused, and then it changed nothing)."""
    ws.send_text(json.dumps({"type": "session.update", "session": session}))
    return receive_until(ws, lambda e: e["type"] in (SessionUpdated.TYPE, "error"))


def _state(ws: Any) -> dict[str, Any]:
    """The session as it is (the reply to an empty update)."""
    return _update(ws, {})[-1]["session"]  # type: ignore[no-any-return]


def _transcription(language: str | None, model: str = "whisper-base") -> dict[str, Any]:
    return {"input_audio_transcription": {"model": model, "language": language}}


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate (the benchmarks' own: punctuation dropped, numbers read)."""
    errors, chars = word_errors(reference, hypothesis)
    return errors / chars


def test_an_english_only_model_refuses_chinese_naming_a_model_that_can(
    shared_components: Any,
) -> None:
    with client_with(shared_components).websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        events = _update(ws, _transcription("zh", model="whisper-tiny.en"))
        state = _state(ws)
    error = next(e for e in events if e["type"] == "error")["error"]
    assert error["code"] == "unsupported_language"
    assert error["param"] == "session.input_audio_transcription.language"
    assert "'whisper-tiny.en' transcribes only en" in error["message"]
    assert "'whisper-base'" in error["message"]  # what to choose instead
    assert state["input_audio_transcription"]["language"] is None


def test_an_unknown_language_is_refused_by_name(shared_components: Any) -> None:
    with client_with(shared_components).websocket_connect("/v1/realtime?dialect=beta") as ws:
        created = ws.receive_json()["session"]["input_audio_transcription"]
        events = _update(ws, _transcription("klingon"))
        state = _state(ws)
    error = next(e for e in events if e["type"] == "error")["error"]
    assert error["code"] == "unsupported_language"
    assert "'klingon' is not a language Whisper knows" in error["message"]
    assert "zh" in error["message"]  # what whisper-base does transcribe
    # one error, and nothing of the update applied: not the model it named either
    assert [e["type"] for e in events] == ["error"]
    assert state["input_audio_transcription"] == created
    assert created["model"] != "whisper-base"


def test_a_bcp47_tag_is_read_by_its_language(shared_components: Any) -> None:
    with client_with(shared_components).websocket_connect("/v1/realtime") as ws:  # GA
        ws.receive_json()
        session = {
            "audio": {"input": {"transcription": {"model": "whisper-base", "language": "zh-CN"}}}
        }
        events = _update(ws, session)
    assert [e["type"] for e in events] == [SessionUpdated.TYPE]
    transcription = events[-1]["session"]["audio"]["input"]["transcription"]
    assert transcription == {"model": "whisper-base", "language": "zh"}


def test_a_mandarin_turn_is_heard_in_simplified_characters_and_answered_in_chinese(
    with_qwen: Any,
) -> None:
    speech = load_clip(CLIP)
    silence = np.zeros(PROTOCOL_RATE, dtype=np.float32)
    with client_with(with_qwen).websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        # the language left to Whisper's detection, the voice to the answer's language
        update = {**_transcription(None), "model": QWEN, "voice": "auto"}
        assert [e["type"] for e in _update(ws, update)] == [SessionUpdated.TYPE]
        stream_audio(ws, np.concatenate([silence[:4800], speech, silence, silence]))
        events = receive_until(ws, is_done)
    transcribed = [e for e in events if e["type"] == TRANSCRIBED]
    assert len(transcribed) == 1  # one user item
    heard = transcribed[0]
    assert heard["language"] == "zh"
    assert heard["transcript"] == simplified(heard["transcript"])
    assert cer(REFERENCE, heard["transcript"]) <= 0.25  # whisper-base: near-misses happen
    done = events[-1]["response"]
    assert done["status"] == "completed"
    answer = "".join(e["delta"] for e in events if e["type"] == AudioTranscriptDelta.TYPE)
    assert re.search(r"[\u4e00-\u9fff]", answer), answer  # Chinese characters
    assert any(e["type"] == AudioDelta.TYPE for e in events)
    assert done["audio"]["output"]["voice"] == "espeak-ng:cmn"  # a Mandarin voice spoke it


def test_a_server_for_mandarin_speakers_sets_its_sessions_defaults() -> None:
    from app.realtime.session_config import SessionConfig
    from app.settings import Settings

    settings = Settings(asr_model="whisper-base", asr_language="zh-CN", voice="auto")
    config = SessionConfig.default(settings, QWEN)
    assert (config.transcription_language, config.voice) == ("zh", "auto")
    assert SessionConfig.default(Settings(), QWEN).transcription_language is None


def test_the_servers_default_language_reaches_the_asr_without_an_update(
    shared_components: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: R1VOICE_ASR_LANGUAGE showed in session.created but reached the ASR only after
    a session.update."""
    from app.speech.asr import Transcript, WhisperASR

    seen: list[str | None] = []
    original = WhisperASR.run

    async def run(self, audio, prefix=None, language=None, prompt=None, **rest) -> Transcript:  # type: ignore[no-untyped-def]
        seen.append(language)
        return await original(self, audio, prefix=prefix, language=language, prompt=prompt, **rest)

    monkeypatch.setattr(WhisperASR, "run", run)
    speech = shared_components.tts.synthesize("Hello there, how are you?", PROTOCOL_RATE)
    # past semantic_vad's longest wait: the turn ends whatever English heard as Chinese
    # sounds like (a transcript that sounds unfinished waits up to SEMANTIC_MAX_WAIT_MS)
    silence = np.zeros(PROTOCOL_RATE * (SEMANTIC_MAX_WAIT_MS["auto"] // 1000 + 1), np.float32)
    client = client_with(shared_components, asr_language="zh")
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        created = ws.receive_json()
        assert created["session"]["input_audio_transcription"]["language"] == "zh"
        stream_audio(ws, np.concatenate([silence[:4800], speech, silence]))
        receive_until(ws, lambda e: e["type"] == TRANSCRIBED)
    assert seen and set(seen) == {"zh"}


def test_switching_to_an_english_only_model_asks_for_its_language_in_the_same_update(
    shared_components: Any,
) -> None:
    with client_with(shared_components).websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        assert [e["type"] for e in _update(ws, _transcription("zh"))] == [SessionUpdated.TYPE]
        events = _update(ws, {"input_audio_transcription": {"model": "whisper-tiny.en"}})
        state = _state(ws)
        both = {"model": "whisper-tiny.en", "language": None}
        switched = _update(ws, {"input_audio_transcription": both})
    error = next(e for e in events if e["type"] == "error")["error"]
    assert error["code"] == "unsupported_language"
    assert "'whisper-tiny.en' transcribes only en" in error["message"]
    assert "in the same update" in error["message"]  # how to switch
    # refused whole: the session keeps its model and language
    assert state["input_audio_transcription"] == {"model": "whisper-base", "language": "zh"}
    assert switched[-1]["session"]["input_audio_transcription"] == both
