"""Spans leave over OTLP/HTTP (protobuf) to a receiver decoding them with opentelemetry-proto;
a collector that is down costs the session nothing: its spans are dropped and counted."""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import pytest
from websockets.sync.client import connect

from app.protocol.server_events import ResponseDone, SessionCreated
from app.telemetry import Telemetry
from tests.app.telemetry.otlp_receiver import otlp_receiver
from tests.conftest import app_with, run_live, user_text_item


def typed_turn(address: str) -> dict[str, Any]:
    """One session: a typed question and `response.create`; returns its response.done."""
    with connect(f"ws://{address}/v1/realtime", open_timeout=30) as ws:
        created = json.loads(ws.recv(timeout=30))
        assert created["type"] == SessionCreated.TYPE
        item = user_text_item("What is the capital of France?")
        ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        ws.send(json.dumps({"type": "response.create"}))
        while True:
            event = json.loads(ws.recv(timeout=180))
            if event["type"] == ResponseDone.TYPE:
                return {"session_id": created["session"]["id"], **event["response"]}


def serve_one_turn(
    components: Any, endpoint: str, **settings: Any
) -> tuple[Telemetry, dict[str, Any]]:
    """A real server tracing to `endpoint` (as R1VOICE_OTEL_ENDPOINT says), one typed turn,
    then the server's telemetry shut down (its last batch sent, or given up)."""
    app = app_with(components, otel_endpoint=endpoint, **settings)
    telemetry = app.state.server.telemetry
    for address in run_live(app):
        done = typed_turn(address)
    telemetry.shutdown()
    return telemetry, done


def test_a_session_reaches_an_otlp_receiver_as_one_nested_trace(shared_components: Any) -> None:
    with otlp_receiver() as (endpoint, received):
        telemetry, done = serve_one_turn(shared_components, endpoint)
    assert done["status"] == "completed"
    assert telemetry.dropped_spans == 0
    spans = received.spans
    assert {s.service for s in spans} == {"r1voice"}
    assert len({s.trace_id for s in spans}) == 1
    by_id = {s.span_id: s for s in spans}
    [root] = [s for s in spans if not s.parent_id]
    assert root.name == "r1voice.session"
    assert root.attributes["r1voice.session.id"] == done["session_id"]
    [turn] = [s for s in spans if s.name == "r1voice.turn"]
    assert turn.parent_id == root.span_id
    assert turn.attributes["r1voice.turn.end_reason"] == "manual"  # response.create
    [chat] = [s for s in spans if s.name.startswith("chat ")]
    assert chat.parent_id == turn.span_id
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.name == f"chat {chat.attributes['gen_ai.request.model']}"
    assert chat.attributes["gen_ai.usage.output_tokens"] == done["usage"]["output_tokens"]
    assert chat.attributes["gen_ai.response.id"] == done["id"]
    tts = [s for s in spans if s.name == "r1voice.tts"]
    assert tts and all(s.parent_id == turn.span_id for s in tts)
    phases = sorted(s.name for s in spans if s.parent_id == chat.span_id)
    assert phases == ["r1voice.llm.decode", "r1voice.llm.prefill", "r1voice.llm.queue"]
    assert all(not s.parent_id or s.parent_id in by_id for s in spans)


def test_an_unreachable_collector_drops_and_counts_and_the_session_goes_on(
    shared_components: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="r1voice.telemetry"):
        telemetry, done = serve_one_turn(shared_components, f"http://127.0.0.1:{port}")
    assert done["status"] == "completed"
    assert telemetry.dropped_spans > 0
    assert any("did not take" in r.getMessage() for r in caplog.records)


def test_content_goes_in_spans_only_when_asked(shared_components: Any) -> None:
    with otlp_receiver() as (endpoint, received):
        _, done = serve_one_turn(shared_components, endpoint, trace_content=True)
    answer = done["output"][0]["content"][0]["transcript"]
    [turn] = [s for s in received.spans if s.name == "r1voice.turn"]
    assert turn.attributes["r1voice.answer"] == answer
    spoken = [s.attributes["r1voice.tts.text"] for s in received.spans if s.name == "r1voice.tts"]
    assert "".join(spoken).replace(" ", "") == answer.replace(" ", "")  # every clause spoken
