"""semantic_vad over the real WebSocket with the real models: JFK's ~1 s rhetorical
pauses do not split his sentence (server_vad at 500 ms splits it into four turns)."""

from __future__ import annotations

import json

import numpy as np
from fastapi.testclient import TestClient

from tests.conftest import REALTIME_RATE, load_clip, receive_until, stream_audio


def _turns(app_client: TestClient, turn_detection: dict[str, object]) -> list[dict[str, object]]:
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        session = {"type": "realtime", "audio": {"input": {"turn_detection": turn_detection}}}
        ws.send_text(json.dumps({"type": "session.update", "session": session}))
        receive_until(ws, lambda e: e["type"] == "session.updated")
        silence = np.zeros(REALTIME_RATE, np.float32)
        # JFK, then enough silence for any window to close (auto waits at most 4 s)
        stream_audio(ws, np.concatenate([silence, load_clip("jfk.flac"), *[silence] * 5]))
        ws.send_text(json.dumps({"type": "r1voice.sync"}))  # answered after every append
        events = receive_until(ws, lambda e: e["type"] == "error")
        committed = sum(e["type"] == "input_audio_buffer.committed" for e in events)
        while (
            sum(
                e["type"] == "conversation.item.input_audio_transcription.completed" for e in events
            )
            < committed
        ):
            events.append(ws.receive_json())
    return events


def test_jfk_is_one_turn_with_semantic_vad(app_client: TestClient) -> None:
    events = _turns(app_client, {"type": "semantic_vad", "create_response": False})
    committed = [e for e in events if e["type"] == "input_audio_buffer.committed"]
    transcripts = [
        e["transcript"]
        for e in events
        if e["type"] == "conversation.item.input_audio_transcription.completed"
    ]
    assert len(committed) == 1, transcripts
    assert not [e for e in events if e["type"] == "conversation.item.deleted"]
    words = str(transcripts[0]).lower()
    assert "americans" in words and "country" in words  # the whole sentence, start to end
