"""Malformed client events: each gets an `error` event with a code, and the session goes on."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.protocol.server_events import AudioTranscriptDelta, SessionUpdated
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


GA_REFUSALS: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    (
        "a PCM rate it does not take",
        {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 44100}}}},
        "invalid_value",
        "session.audio.input.format.rate",
        "8000, 16000 or 24000",  # the object's own error, not the beta strings'
    ),
    (
        "G.711 at another rate",
        {"audio": {"input": {"format": {"type": "audio/pcmu", "rate": 24000}}}},
        "invalid_value",
        "session.audio.input.format",
        "8 kHz",
    ),
    (
        "a speed out of range",
        {"audio": {"output": {"speed": 10}}},
        "invalid_value",
        "session.audio.output.speed",
        None,
    ),
    (
        "no output tokens",
        {"max_output_tokens": 0},
        "invalid_value",
        "session.max_output_tokens",
        None,
    ),
    (
        "a transcription session",
        {"type": "transcription"},
        "unsupported_session_type",
        "session.type",
        "realtime",
    ),
]


@pytest.mark.parametrize(
    ("case", "session", "code", "param", "says"), GA_REFUSALS, ids=[c[0] for c in GA_REFUSALS]
)
def test_a_ga_update_is_refused_naming_the_field_as_the_client_wrote_it(
    app_client: TestClient,
    case: str,
    session: dict[str, Any],
    code: str,
    param: str,
    says: str | None,
) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:  # GA
        ws.receive_json()
        update = {"type": "session.update", "event_id": "evt_7", "session": {"type": "realtime"}}
        update["session"] |= session  # type: ignore[operator]
        ws.send_text(json.dumps(update))
        error = ws.receive_json()
        assert error["type"] == "error", error
        assert (error["error"]["code"], error["error"]["param"]) == (code, param)
        assert error["error"]["event_id"] == "evt_7"
        assert param in error["error"]["message"] or code == "unsupported_session_type"
        assert says is None or says in error["error"]["message"]
        assert "input_audio_format" not in error["error"]["message"]  # no beta names
        again = {"type": "session.update", "session": {"type": "realtime", "instructions": "Hi."}}
        ws.send_text(json.dumps(again))
        assert ws.receive_json()["type"] == SessionUpdated.TYPE  # the session goes on


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
        receive_until(ws, lambda e: e["type"] == AudioTranscriptDelta.TYPE)
        ws.send_text(json.dumps({"type": "response.cancel"}))
        events = receive_until(ws, is_done)
        assert events[-1]["response"]["status"] == "cancelled"
        # a new answer starts, then the client vanishes mid-answer
        respond(ws)
        receive_until(ws, lambda e: e["type"] == AudioTranscriptDelta.TYPE)
    _wait_idle(llm)
    assert llm.stats()["num_running"] == 0
    assert not [t for t in threading.enumerate() if t.name == "hf-generate"]


def _wait_idle(llm: Any, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while llm.stats().get("num_running", 0) and time.monotonic() < deadline:
        time.sleep(0.05)
