"""Prometheus: per-turn latency histograms, responses, sessions, engine counters."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import TurnMetrics
from app.server.metrics import Metrics
from tests.conftest import is_done, receive_until, stream_audio


def _sample(text: str, name: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_voice_turn_is_measured(app_client: TestClient) -> None:
    before = app_client.get("/metrics").text
    tts = app_client.app.state.server.components.tts  # type: ignore[attr-defined]
    speech = tts.synthesize("What is the capital of France?", PROTOCOL_RATE)
    with app_client.websocket_connect("/v1/realtime?dialect=beta&r1voice_events=1") as ws:
        ws.receive_json()
        stream_audio(ws, np.concatenate([speech, np.zeros(PROTOCOL_RATE, np.float32)]))
        events = receive_until(ws, lambda e: e["type"] == TurnMetrics.TYPE)
    assert any(is_done(e) for e in events)
    metrics = events[-1]
    order = ("first_token", "first_clause", "first_synthesized", "first_audio")
    marks = [metrics[f"speech_stopped_to_{stage}_ms"] for stage in order]
    assert marks == sorted(marks), marks  # each stage after the one it waits for
    after = app_client.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    text = after.text
    for stage in ("transcript", *order):
        name = f'r1voice_turn_latency_seconds_count{{stage="{stage}"}}'
        assert _sample(text, name) == _sample(before, name) + 1
    assert _sample(text, 'r1voice_responses_total{status="completed"}') >= 1
    assert _sample(text, "r1voice_ready") == 1
    assert "r1voice_llm_num_running" in text


def test_turn_merges_are_counted_by_turn_detection() -> None:
    metrics = Metrics()
    metrics.record_merge("server_vad")
    metrics.record_merge("server_vad")
    metrics.record_merge("semantic_vad")
    page = generate_latest(metrics.registry).decode()
    assert 'r1voice_turn_merges_total{turn_detection="server_vad"} 2.0' in page
    assert 'r1voice_turn_merges_total{turn_detection="semantic_vad"} 1.0' in page


def test_sessions_and_transport_errors_are_counted_by_transport() -> None:
    metrics = Metrics()
    metrics.record_session("realtime")
    metrics.record_session("twilio")
    metrics.record_session("twilio")
    metrics.record_transport_error("twilio", "invalid_media")
    page = generate_latest(metrics.registry).decode()
    assert 'r1voice_sessions_total{transport="realtime"} 1.0' in page
    assert 'r1voice_sessions_total{transport="twilio"} 2.0' in page
    assert 'r1voice_transport_errors_total{code="invalid_media",transport="twilio"} 1.0' in page
