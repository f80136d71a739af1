"""The Realtime `session.tracing` field: "auto" or {workflow_name, group_id, metadata}
becomes the session trace's attributes; anything else is refused, naming the field."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.protocol.server_events import Error, SessionCreated, SessionUpdated
from app.telemetry import Telemetry
from tests.conftest import app_with


def session_span_after(components: Any, updates: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """One session given `updates` as `session.tracing`; the session span's attributes and
    the reply to each update."""
    exporter = InMemorySpanExporter()
    app = app_with(components)
    app.state.server.telemetry = Telemetry(exporter, batch=False)
    replies = []
    with TestClient(app).websocket_connect("/v1/realtime") as ws:
        assert ws.receive_json()["type"] == SessionCreated.TYPE
        for tracing in updates:
            ws.send_text(json.dumps({"type": "session.update", "session": {"tracing": tracing}}))
            replies.append(ws.receive_json())
    [session] = [s for s in exporter.get_finished_spans() if s.name == "r1voice.session"]
    return dict(session.attributes or {}), replies


def test_tracing_names_the_sessions_trace(shared_components: Any) -> None:
    tracing = {"workflow_name": "support line", "group_id": "g-7", "metadata": {"tier": "gold"}}
    attributes, replies = session_span_after(shared_components, [tracing])
    assert [r["type"] for r in replies] == [SessionUpdated.TYPE]
    assert attributes["r1voice.tracing.workflow_name"] == "support line"
    assert attributes["r1voice.tracing.group_id"] == "g-7"
    assert attributes["r1voice.tracing.metadata.tier"] == "gold"


def test_auto_is_taken_and_malformed_tracing_is_refused_by_name(shared_components: Any) -> None:
    attributes, replies = session_span_after(shared_components, ["auto", "manual", {"metadata": 3}])
    assert [r["type"] for r in replies] == [SessionUpdated.TYPE, Error.TYPE, Error.TYPE]
    assert attributes["r1voice.tracing"] == "auto"
    assert replies[1]["error"]["param"] == "session.tracing"
    assert '"auto" or an object' in replies[1]["error"]["message"]
    assert replies[2]["error"]["param"] == "session.tracing.metadata"
