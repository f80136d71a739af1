"""Malformed client events: each gets an `error` event with a code, and the session goes on."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import answer_text, ask, is_done, receive_until, respond

AUDIO_ODD = base64.b64encode(b"\x01\x02\x03").decode()

CASES: list[tuple[str, str | bytes, str, str | None]] = [
    ("not json", "{this is not json", "invalid_json", None),
    ("not an object", "[1, 2, 3]", "invalid_event", None),
    ("no type", json.dumps({"audio": "AAAA"}), "invalid_event", "type"),
    (
        "unknown type",
        json.dumps({"type": "input_audio_buffer.explode"}),
        "unknown_event_type",
        "type",
    ),
    (
        "bad base64",
        json.dumps({"type": "input_audio_buffer.append", "audio": "%%%not base64%%%"}),
        "invalid_base64",
        "audio",
    ),
    (
        "audio wrong type",
        json.dumps({"type": "input_audio_buffer.append", "audio": 123}),
        "invalid_value",
        "audio",
    ),
    ("missing audio", json.dumps({"type": "input_audio_buffer.append"}), "invalid_value", "audio"),
    (
        "odd PCM16 bytes",
        json.dumps({"type": "input_audio_buffer.append", "audio": AUDIO_ODD}),
        "invalid_audio_format",
        "audio",
    ),
    (
        "unknown audio format",
        json.dumps({"type": "session.update", "session": {"input_audio_format": "mp3"}}),
        "invalid_value",
        "session.input_audio_format",
    ),
    (
        "unsupported rate",
        json.dumps(
            {
                "type": "session.update",
                "session": {"input_audio_format": {"type": "audio/pcm", "rate": 44100}},
            }
        ),
        "invalid_value",
        None,
    ),
    (
        "threshold out of range",
        json.dumps(
            {
                "type": "session.update",
                "session": {"turn_detection": {"type": "server_vad", "threshold": 7}},
            }
        ),
        "invalid_value",
        None,
    ),
    (
        "wrong field type",
        json.dumps({"type": "session.update", "session": {"temperature": "hot"}}),
        "invalid_value",
        "session.temperature",
    ),
    (
        "empty item content",
        json.dumps(
            {
                "type": "conversation.item.create",
                "item": {"type": "message", "role": "user", "content": []},
            }
        ),
        "invalid_value",
        None,
    ),
    (
        "bad role",
        json.dumps(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "robot",
                    "content": [{"type": "input_text", "text": "hi"}],
                },
            }
        ),
        "invalid_value",
        None,
    ),
    (
        "commit empty buffer",
        json.dumps({"type": "input_audio_buffer.commit"}),
        "input_audio_buffer_commit_empty",
        None,
    ),
    (
        "cancel without response",
        json.dumps({"type": "response.cancel"}),
        "response_cancel_not_active",
        None,
    ),
    ("binary frame", b"\x00\xff\x00", "invalid_json", None),
    (  # the server plays no audio on the WebSocket: the client stops its own playback
        "output buffer clear over the WebSocket",
        json.dumps({"type": "output_audio_buffer.clear"}),
        "invalid_event",
        None,
    ),
]


def _text_turn(ws: Any, text: str = "What is the capital of France?") -> list[dict[str, Any]]:
    ask(ws, text, {"modalities": ["text"]})
    return receive_until(ws, is_done)


@pytest.mark.parametrize(("case", "raw", "code", "param"), CASES, ids=[c[0] for c in CASES])
def test_malformed_event_gets_error_and_session_goes_on(
    app_client: TestClient, case: str, raw: str | bytes, code: str, param: str | None
) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        if isinstance(raw, bytes):
            ws.send_bytes(raw)
        else:
            ws.send_text(raw)
        error = ws.receive_json()
        assert error["type"] == "error", error
        assert error["error"]["code"] == code
        assert error["error"]["message"]
        if param is not None:
            assert error["error"]["param"] == param
        events = _text_turn(ws)
        assert events[-1]["response"]["status"] == "completed"
        assert answer_text(events).strip()


def test_error_echoes_client_event_id(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ws.send_text(json.dumps({"type": "input_audio_buffer.commit", "event_id": "evt_42"}))
        assert ws.receive_json()["error"]["event_id"] == "evt_42"


def test_second_response_while_active_is_refused(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "Tell me a story.")
        respond(ws)
        events = receive_until(ws, is_done)
    errors = [e for e in events if e["type"] == "error"]
    assert [e["error"]["code"] for e in errors] == ["conversation_already_has_active_response"]


def test_cancel_then_disconnect_leaves_no_running_request(app_client: TestClient) -> None:
    """response.cancel stops generation; closing mid-answer frees everything."""
    llm = app_client.app.state.server.components.llm  # type: ignore[attr-defined]
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "Tell me a long story about a dragon.")
        receive_until(ws, lambda e: e["type"] == "response.audio_transcript.delta")
        ws.send_text(json.dumps({"type": "response.cancel"}))
        events = receive_until(ws, is_done)
        assert events[-1]["response"]["status"] == "cancelled"
        # a new answer starts, then the client vanishes mid-answer
        respond(ws)
        receive_until(ws, lambda e: e["type"] == "response.audio_transcript.delta")
    _wait_idle(llm)
    assert llm.stats()["num_running"] == 0
    assert not [t for t in threading.enumerate() if t.name == "hf-generate"]


def _wait_idle(llm: Any, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while llm.stats().get("num_running", 0) and time.monotonic() < deadline:
        time.sleep(0.05)
