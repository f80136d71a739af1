"""HTTP routes join an incoming W3C traceparent (with a collector configured); so does a
Realtime session, from its WebSocket handshake."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from websockets.sync.client import connect

from app.telemetry import Telemetry
from tests.conftest import app_with, run_live

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def traced_client(components: Any) -> tuple[TestClient, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    app = app_with(components)
    app.state.server.telemetry = Telemetry(exporter, batch=False)
    return TestClient(app), exporter


def test_a_request_with_traceparent_is_a_child_of_the_callers_span(shared_components: Any) -> None:
    client, exporter = traced_client(shared_components)
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    assert client.get("/v2/health/live", headers={"traceparent": traceparent}).status_code == 200
    [span] = exporter.get_finished_spans()
    assert span.name == "GET /v2/health/live"
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.attributes["http.response.status_code"] == 200


def test_a_request_without_one_starts_a_trace_and_a_malformed_one_is_ignored(
    shared_components: Any,
) -> None:
    client, exporter = traced_client(shared_components)
    client.get("/v2/health/live")
    client.get("/v2/health/live", headers={"traceparent": "00-not-a-trace-01"})
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    assert all(s.parent is None for s in spans)
    assert len({s.context.trace_id for s in spans}) == 2


def test_a_realtime_session_joins_the_traceparent_of_its_handshake(shared_components: Any) -> None:
    exporter = InMemorySpanExporter()
    app = app_with(shared_components)
    app.state.server.telemetry = Telemetry(exporter, batch=False)
    headers = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    for address in run_live(app):
        with connect(f"ws://{address}/v1/realtime", additional_headers=headers) as ws:
            session_id = json.loads(ws.recv(timeout=30))["session"]["id"]
    deadline = time.monotonic() + 30
    while not (
        sessions := [s for s in exporter.get_finished_spans() if s.name == "r1voice.session"]
    ):
        assert time.monotonic() < deadline, "the session span did not end"
        time.sleep(0.05)
    [session] = sessions
    assert session.attributes["r1voice.session.id"] == session_id
    assert f"{session.context.trace_id:032x}" == TRACE_ID
    assert session.parent is not None and f"{session.parent.span_id:016x}" == PARENT_ID
