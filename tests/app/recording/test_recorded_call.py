"""A recorded call over a real WebSocket with the real bundled models: announced in
session.created, written as stereo WAV (the user left, the assistant right, cut where
the client truncated the answer) with its transcript, served by the report routes."""

from __future__ import annotations

import base64
import json
import logging
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from app.audio import PROTOCOL_RATE, float_to_pcm16
from app.protocol.server_events import (
    AudioDelta,
    ItemTruncated,
    OutputItemAdded,
    ResponseDone,
    SessionCreated,
    ga,
)
from tests.conftest import app_with, load_clip, run_live, user_text_item

HEARD_MS = 400  # where the client says it stopped playing the answer


def call(address: str) -> dict[str, Any]:
    """Speak one turn, hear the answer, truncate it at HEARD_MS, leave."""
    silence = np.zeros(PROTOCOL_RATE // 2, np.float32)
    words = load_clip("jfk.flac")[: 3 * PROTOCOL_RATE]
    pcm = float_to_pcm16(np.concatenate([silence, words, *[silence] * 4]))
    with connect(f"ws://{address}/v1/realtime", open_timeout=30) as ws:
        created = json.loads(ws.recv(timeout=30))
        assert created["type"] == SessionCreated.TYPE
        step = PROTOCOL_RATE * 2 // 10
        for i in range(0, len(pcm), step):
            audio = base64.b64encode(pcm[i : i + step]).decode()
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
        answer_bytes, item_id = 0, None
        while True:
            event = json.loads(ws.recv(timeout=180))
            if event["type"] == OutputItemAdded.TYPE:
                item_id = event["item"]["id"]
            elif event["type"] == ga.RENAMED[AudioDelta]:
                answer_bytes += len(base64.b64decode(event["delta"]))
            elif event["type"] == ResponseDone.TYPE:
                break
        truncate = {"item_id": item_id, "content_index": 0, "audio_end_ms": HEARD_MS}
        ws.send(json.dumps({"type": "conversation.item.truncate", **truncate}))
        while json.loads(ws.recv(timeout=30))["type"] != ItemTruncated.TYPE:
            pass
    return {"session": created["session"], "answer_s": answer_bytes / 2 / PROTOCOL_RATE}


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():  # written on a worker thread as the session closes
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)
    time.sleep(0.2)  # its JSON follows the WAV


def test_a_recorded_call_plays_back_as_heard_and_the_report_names_it(
    shared_components: Any, tmp_path: Path
) -> None:
    app = app_with(shared_components, record_sessions=True, recordings_dir=str(tmp_path))
    for address in run_live(app):
        result = call(address)
    session_id = result["session"]["id"]
    url = f"/v1/r1voice/sessions/{session_id}/recording"
    assert result["session"]["recording"] == {"url": url}
    assert result["answer_s"] > HEARD_MS / 1000  # the answer was longer than what played
    wait_for(tmp_path / f"{session_id}.json")

    with wave.open(str(tmp_path / f"{session_id}.wav")) as wav:
        assert (wav.getnchannels(), wav.getframerate()) == (2, 16000)
        frames = np.frombuffer(wav.readframes(wav.getnframes()), np.int16).reshape(-1, 2)
    user, assistant = frames[:, 0], frames[:, 1]
    assert np.count_nonzero(user) > 2.5 * 16000  # the three seconds of words, as heard
    played = np.nonzero(assistant)[0]
    assert 0 < played.size <= HEARD_MS * 16  # cut where the client stopped it
    assert played[0] > np.nonzero(user)[0][0]  # the answer came after the words

    transcript = json.loads((tmp_path / f"{session_id}.json").read_text())
    assert transcript["id"] == session_id
    assert [i["role"] for i in transcript["items"]] == ["user", "assistant"]
    assert transcript["turns"][0]["stages"]
    assert transcript["recording"]["channels"] == ["user", "assistant"]

    client = TestClient(app)
    report = client.get(f"/v1/r1voice/sessions/{session_id}").json()
    assert report["recording_url"] == url
    wav_reply = client.get(url)
    assert wav_reply.status_code == 200 and wav_reply.headers["content-type"] == "audio/wav"
    assert wav_reply.content == (tmp_path / f"{session_id}.wav").read_bytes()
    missing = client.get("/v1/r1voice/sessions/sess_0/recording")
    assert missing.status_code == 404 and "sess_0" in missing.json()["error"]["message"]


def test_a_disk_short_of_room_records_nothing_and_the_session_goes_on(
    shared_components: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = app_with(
        shared_components,
        record_sessions=True,
        recordings_dir=str(tmp_path),
        recordings_min_free_mb=10**12,
    )
    with caplog.at_level(logging.WARNING, logger="r1voice.telemetry"):
        for address in run_live(app):
            with connect(f"ws://{address}/v1/realtime", open_timeout=30) as ws:
                created = json.loads(ws.recv(timeout=30))
                item = user_text_item("Hello.")
                ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
                ws.send(json.dumps({"type": "response.create"}))
                while (done := json.loads(ws.recv(timeout=180)))["type"] != ResponseDone.TYPE:
                    pass
    assert "recording" not in created["session"]
    assert done["response"]["status"] == "completed"
    assert "is not recorded: only" in caplog.text
    assert list(tmp_path.iterdir()) == []
