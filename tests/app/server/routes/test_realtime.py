"""Voice round trips over the real WebSocket, with the real models and the lifespan running."""

from __future__ import annotations

import json

import numpy as np
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import (
    AudioDelta,
    InputAudioCommitted,
    ItemCreated,
    OutputItemAdded,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    SessionUpdated,
    SpeechStarted,
    SpeechStopped,
    TranscriptionCompleted,
)
from tests.conftest import (
    answer_text,
    audio_seconds,
    is_done,
    load_clip,
    receive_until,
    respond,
    send_user_text,
    stream_audio,
)


def _transcripts(events: list[dict]) -> list[str]:
    return [e["transcript"] for e in events if e["type"] == TranscriptionCompleted.TYPE]


def test_session_created_first_and_realtime_subprotocol(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=beta", subprotocols=["realtime"]) as ws:
        assert ws.accepted_subprotocol == "realtime"
        first = ws.receive_json()
        assert first["type"] == SessionCreated.TYPE
        assert first["session"]["input_audio_format"] == "pcm16"
        turn_detection = first["session"]["turn_detection"]  # the default: semantic_vad, auto
        assert (turn_detection["type"], turn_detection["eagerness"]) == ("semantic_vad", "auto")
        assert turn_detection["silence_duration_ms"] == 4000  # auto's longest wait


def test_jfk_round_trip(app_client: TestClient) -> None:
    """Human speech in 20 ms chunks then silence -> transcript -> spoken answer -> done."""
    speech = load_clip("jfk.flac")
    silence = np.zeros(PROTOCOL_RATE * 2, dtype=np.float32)
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
        stream_audio(ws, np.concatenate([speech, silence]))
        events = receive_until(ws, lambda e: is_done(e) and e["response"]["status"] == "completed")
    types = [e["type"] for e in events]
    assert types.index(SpeechStarted.TYPE) < types.index(SpeechStopped.TYPE)
    transcripts = _transcripts(events)
    final = transcripts[-1].lower().replace(",", "")
    assert "ask not what your country can do for you" in final, transcripts
    # the answer comes after the final transcript, as audio, and is closed by response.done
    assert types.index(ResponseCreated.TYPE) > types.index(TranscriptionCompleted.TYPE)
    assert audio_seconds(events) >= 0.5
    assert answer_text(events).strip()
    assert events[-1]["response"]["output"][0]["content"][0]["transcript"] == answer_text(events)


def test_spoken_question_gets_answer_about_paris(app_client: TestClient) -> None:
    tts = app_client.app.state.server.components.tts  # type: ignore[attr-defined]
    question = tts.synthesize("What is the capital of France?", PROTOCOL_RATE)
    silence = np.zeros(PROTOCOL_RATE, dtype=np.float32)
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        stream_audio(ws, np.concatenate([silence[:4800], question, silence]))
        events = receive_until(ws, is_done)
    heard = _transcripts(events)[-1].lower()
    assert "what is the capital of" in heard
    # tiny.en heard the last word as "friends" in 1 of 3 whole-suite runs (never alone);
    # the answer is about Paris when the question was heard as France
    if "france" in heard:
        assert "paris" in answer_text(events).lower()
    assert audio_seconds(events) >= 0.5


def test_manual_commit_at_16khz_with_turn_detection_off(app_client: TestClient) -> None:
    """16 kHz input via session config, VAD off, explicit commit and response.create."""
    tts = app_client.app.state.server.components.tts  # type: ignore[attr-defined]
    question = tts.synthesize("What is the capital of France?", 16_000)
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ws.send_text(
            json.dumps(
                {
                    "type": "session.update",
                    "session": {
                        "input_audio_format": {"type": "audio/pcm", "rate": 16000},
                        "turn_detection": None,
                    },
                }
            )
        )
        updated = ws.receive_json()
        assert updated["type"] == SessionUpdated.TYPE
        assert updated["session"]["turn_detection"] is None
        stream_audio(ws, question, rate=16_000)
        ws.send_text(json.dumps({"type": "input_audio_buffer.commit"}))
        ws.send_text(json.dumps({"type": "response.create"}))
        events = receive_until(ws, is_done)
    types = [e["type"] for e in events]
    assert SpeechStarted.TYPE not in types
    assert types[0] == InputAudioCommitted.TYPE
    heard = _transcripts(events)[0].lower()
    assert "what is the capital of" in heard  # its last word, as above, may be a near-miss
    if "france" in heard:
        assert "paris" in answer_text(events).lower()


def test_text_turn_in_text_mode(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({"type": "session.update", "session": {"modalities": ["text"]}}))
        ws.receive_json()
        send_user_text(ws, "What is the capital of France?")
        created = ws.receive_json()
        assert created["type"] == ItemCreated.TYPE
        respond(ws)
        events = receive_until(ws, is_done)
    types = [e["type"] for e in events]
    assert AudioDelta.TYPE not in types
    assert types[:2] == [ResponseCreated.TYPE, OutputItemAdded.TYPE]
    assert types[-1] == ResponseDone.TYPE
    assert "paris" in answer_text(events).lower()
