"""Idle nudges (`turn_detection.idle_timeout_ms`) over the real WebSocket with the real
models: silence streamed at a microphone's pace after a spoken answer."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import (
    AudioDelta,
    InputAudioCommitted,
    InputAudioTimeoutTriggered,
    ItemDone,
    ResponseCreated,
    ResponseDone,
    SessionUpdated,
    SpeechStarted,
    TranscriptionCompleted,
    ga,
)
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.conftest import append_event, ask, load_clip, receive_until, respond

TIMEOUT_MS = 5000  # OpenAI's least idle_timeout_ms
INSTRUCTIONS = "Answer in one short sentence."


def _speak(ws: Any, samples: np.ndarray, chunk_ms: int = 20) -> None:
    """Send audio as a microphone does: each 20 ms chunk once it has been "spoken"."""
    step = PROTOCOL_RATE * chunk_ms // 1000
    start = time.monotonic()
    for n, i in enumerate(range(0, samples.size, step)):
        time.sleep(max(0.0, start + n * chunk_ms / 1000 - time.monotonic()))
        ws.send_text(append_event(samples[i : i + step]))


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(round(PROTOCOL_RATE * seconds), np.float32)


def _synced(ws: Any) -> list[dict[str, Any]]:
    """The events up to now: an unknown event is answered (with an error) only after
    every append sent before it has been handled."""
    ws.send_text(json.dumps({"type": "r1voice.sync"}))
    return receive_until(ws, lambda e: e["type"] == "error")


def _start(ws: Any, turn_detection: dict[str, Any], r1voice: dict[str, Any]) -> dict[str, Any]:
    ws.receive_json()  # session.created
    session = {
        "type": "realtime",
        "instructions": INSTRUCTIONS,
        "max_output_tokens": 24,
        "audio": {"input": {"turn_detection": turn_detection}},
        "r1voice": r1voice,
    }
    ws.send_text(json.dumps({"type": "session.update", "session": session}))
    updated = receive_until(ws, lambda e: e["type"] in (SessionUpdated.TYPE, "error"))[-1]
    assert updated["type"] == SessionUpdated.TYPE, updated
    return dict(updated["session"])


def _answered(ws: Any) -> list[dict[str, Any]]:
    return receive_until(ws, lambda e: e["type"] == ResponseDone.TYPE)


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def _audio_s(events: list[dict[str, Any]]) -> float:
    pieces = _of(events, ga.RENAMED[AudioDelta])
    return sum(len(base64.b64decode(e["delta"])) for e in pieces) / 2 / PROTOCOL_RATE


def test_silence_after_an_answer_is_nudged_once_then_waits_for_the_user(
    app_client: TestClient,
) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:
        detection = {"type": "server_vad", "idle_timeout_ms": TIMEOUT_MS}
        session = _start(ws, detection, {"max_idle_nudges": 1})
        assert session["audio"]["input"]["turn_detection"]["idle_timeout_ms"] == TIMEOUT_MS
        assert session["r1voice"]["max_idle_nudges"] == 1
        ask(ws, "What colour is the sky?")
        first = _answered(ws)
        assert _audio_s(first) > 0  # a spoken answer: the silence counts once it played
        # the answer plays out (the server sends it at most 0.3 s ahead), then 5 s of silence
        _speak(ws, _silence(TIMEOUT_MS / 1000 + 1.5))
        nudged = _synced(ws)
        nudged += receive_until(ws, lambda e: e["type"] == ResponseDone.TYPE)
        # the nudge plays out as the first answer did, then the timeout passes again with
        # room to spare: no second nudge (max 1)
        _speak(ws, _silence(TIMEOUT_MS / 1000 + 2))
        after = _synced(ws)

    (timeout,) = _of(nudged, InputAudioTimeoutTriggered.TYPE)
    assert TIMEOUT_MS <= timeout["audio_end_ms"] - timeout["audio_start_ms"] < TIMEOUT_MS + 100
    kinds = [e["type"] for e in nudged]
    at = kinds.index(InputAudioTimeoutTriggered.TYPE)
    # OpenAI's order: the silence is committed as a user item (heard as nothing), answered
    assert kinds[at + 1 : at + 5] == [
        InputAudioCommitted.TYPE,
        ga.ITEM_ADDED,
        ItemDone.TYPE,
        TranscriptionCompleted.TYPE,
    ]
    committed = nudged[at + 1]
    assert committed["item_id"] == timeout["item_id"]
    assert committed["previous_item_id"] == first[-1]["response"]["output"][0]["id"]
    assert nudged[at + 4]["transcript"] == ""
    assert len(_of(nudged, ResponseCreated.TYPE)) == 1
    assert kinds.index(ResponseCreated.TYPE) > at
    done = nudged[-1]["response"]
    # answered in full, or cut at max_output_tokens (the model's words are not the point)
    assert done["status"] == "completed" or done["status_details"] == {
        "type": "incomplete",
        "reason": "max_output_tokens",
    }, done
    assert done["output"][0]["content"][0]["transcript"]
    assert _audio_s(nudged) > 0  # the nudge is spoken
    assert not _of(after, InputAudioTimeoutTriggered.TYPE)
    assert not _of(after, ResponseCreated.TYPE)
    assert invalid_events(first + nudged + after) == []  # the SDK's GA models parse them


def test_speech_before_the_timeout_cancels_it_and_without_create_response_none_answers(
    app_client: TestClient,
) -> None:
    """create_response off: the timeout is reported (the client may answer it), no
    response starts. Then speech 2 s into the silence after an answer: no timeout at all,
    even long after (only an answer's end starts the count again). The answers are text:
    nothing to play out, the silence counts from their end."""
    with app_client.websocket_connect("/v1/realtime") as ws:
        detection = {"type": "server_vad", "idle_timeout_ms": TIMEOUT_MS, "create_response": False}
        _start(ws, detection, {})
        ask(ws, "What colour is the sky?", {"output_modalities": ["text"]})
        _answered(ws)
        _speak(ws, _silence(TIMEOUT_MS / 1000 + 1.5))
        reported = _synced(ws)
        respond(ws, {"output_modalities": ["text"]})
        _answered(ws)
        words = load_clip("jfk.flac")[: 3 * PROTOCOL_RATE]  # "And so, my fellow Americans"
        _speak(ws, np.concatenate([_silence(2), words, _silence(TIMEOUT_MS / 1000 + 2)]))
        spoken = _synced(ws)

    assert len(_of(reported, InputAudioTimeoutTriggered.TYPE)) == 1
    assert not _of(reported, ResponseCreated.TYPE)  # create_response is off
    assert not _of(spoken, InputAudioTimeoutTriggered.TYPE)
    started = {e["item_id"] for e in _of(spoken, SpeechStarted.TYPE)}
    committed = {e["item_id"] for e in _of(spoken, InputAudioCommitted.TYPE)}
    assert committed and committed <= started  # the words' turns, and no silence item


@pytest.mark.parametrize(
    ("session", "param"),
    [
        ({"idle_timeout_ms": 4999}, "session.audio.input.turn_detection.idle_timeout_ms"),
        ({"idle_timeout_ms": 30001}, "session.audio.input.turn_detection.idle_timeout_ms"),
        ({"idle_timeout_ms": "6000"}, "session.audio.input.turn_detection.idle_timeout_ms"),
        ({"idle_timeout_ms": 6000.5}, "session.audio.input.turn_detection.idle_timeout_ms"),
        ({"r1voice": {"max_idle_nudges": 0}}, "session.r1voice.max_idle_nudges"),
        ({"r1voice": {"max_idle_nudges": 11}}, "session.r1voice.max_idle_nudges"),
        ({"r1voice": {"max_idle_nudges": "2"}}, "session.r1voice.max_idle_nudges"),
        ({"r1voice": {"max_idle_nudges": None}}, "session.r1voice.max_idle_nudges"),
    ],
)
def test_a_bad_idle_setting_is_an_error_naming_the_field(
    app_client: TestClient, session: dict[str, Any], param: str
) -> None:
    detection = {"type": "server_vad", "silence_duration_ms": 700}
    if "idle_timeout_ms" in session:
        detection["idle_timeout_ms"] = session.pop("idle_timeout_ms")
    with app_client.websocket_connect("/v1/realtime") as ws:
        created = ws.receive_json()["session"]
        update = {
            "type": "realtime",
            "instructions": INSTRUCTIONS,
            "audio": {"input": {"turn_detection": detection}},
            **session,
        }
        ws.send_text(json.dumps({"type": "session.update", "session": update}))
        probe = {"type": "realtime"}  # its reply shows the session as the refusal left it
        ws.send_text(json.dumps({"type": "session.update", "session": probe}))
        events = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
    errors = _of(events, "error")
    assert [(e["error"]["code"], e["error"]["param"]) for e in errors] == [("invalid_value", param)]
    assert [e["type"] for e in events] == ["error", SessionUpdated.TYPE]  # one reply each
    updated = events[-1]["session"]
    assert updated["instructions"] == created["instructions"] != INSTRUCTIONS  # refused whole
    assert updated["r1voice"]["max_idle_nudges"] == created["r1voice"]["max_idle_nudges"] == 2
    turn_detection = updated["audio"]["input"]["turn_detection"]
    assert turn_detection == created["audio"]["input"]["turn_detection"]


def test_semantic_vad_takes_an_idle_timeout_too(app_client: TestClient) -> None:
    """OpenAI has it on server_vad only; here the default turn detection takes it as well
    (the timer watches the coordinator's turns, whichever ends them)."""
    with app_client.websocket_connect("/v1/realtime") as ws:
        detection = {"type": "semantic_vad", "eagerness": "high", "idle_timeout_ms": 30000}
        session = _start(ws, detection, {"max_idle_nudges": 10})
    turn_detection = session["audio"]["input"]["turn_detection"]
    assert (turn_detection["type"], turn_detection["idle_timeout_ms"]) == ("semantic_vad", 30000)
    assert session["r1voice"]["max_idle_nudges"] == 10
