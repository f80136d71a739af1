"""Two sessions at once over real WebSockets, real bundled models: two disjoint span trees,
each correctly nested, in the OpenTelemetry GenAI conventions; and their reports."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from websockets.sync.client import connect

from app.audio import PROTOCOL_RATE, float_to_pcm16
from app.protocol.server_events import ResponseDone, SessionCreated
from app.telemetry import Telemetry
from tests.conftest import app_with, load_clip, run_live

STAGES_UNDER_TURN = {"r1voice.user_speech", "r1voice.vad", "r1voice.stt", "r1voice.tts"}


def spoken_turn() -> bytes:
    """Half a second of silence, "And so, my fellow Americans", then silence (VAD ends it)."""
    silence = np.zeros(PROTOCOL_RATE // 2, np.float32)
    words = load_clip("jfk.flac")[: 3 * PROTOCOL_RATE]
    return float_to_pcm16(np.concatenate([silence, words, *[silence] * 4]))


def converse(address: str, pcm: bytes, out: dict[str, Any]) -> None:
    """One session: speak one turn, wait for its answer's response.done, leave."""
    with connect(f"ws://{address}/v1/realtime", open_timeout=30) as ws:
        created = json.loads(ws.recv(timeout=30))
        assert created["type"] == SessionCreated.TYPE
        out["id"] = created["session"]["id"]
        out["detection"] = created["session"]["audio"]["input"]["turn_detection"]["type"]
        step = PROTOCOL_RATE * 2 // 10  # 100 ms per append
        for i in range(0, len(pcm), step):
            audio = base64.b64encode(pcm[i : i + step]).decode()
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
        while True:
            event = json.loads(ws.recv(timeout=180))
            if event["type"] == ResponseDone.TYPE:
                out["done"] = event["response"]
                return


@pytest.fixture
def traced(shared_components: Any) -> Iterator[tuple[str, InMemorySpanExporter, Telemetry]]:
    exporter = InMemorySpanExporter()
    telemetry = Telemetry(exporter, reports=4, batch=False)
    app = app_with(shared_components)
    app.state.server.telemetry = telemetry
    for address in run_live(app):
        yield address, exporter, telemetry
    telemetry.shutdown()


def parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def by_trace(spans: tuple[ReadableSpan, ...]) -> dict[int, list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        traces.setdefault(span.context.trace_id, []).append(span)
    return traces


def test_two_sessions_at_once_give_two_disjoint_correctly_nested_trees(
    traced: tuple[str, InMemorySpanExporter, Telemetry],
) -> None:
    address, exporter, telemetry = traced
    pcm = spoken_turn()
    results: list[dict[str, Any]] = [{}, {}]
    threads = [threading.Thread(target=converse, args=(address, pcm, r)) for r in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all("done" in r for r in results), results
    # the sessions end as their sockets close: their session spans end then
    deadline = 0
    while sum(s.name == "r1voice.session" for s in exporter.get_finished_spans()) < 2:
        deadline += 1
        assert deadline < 200, "the session spans did not end"
        threading.Event().wait(0.05)

    traces = by_trace(exporter.get_finished_spans())
    assert len(traces) == 2  # one per session, nothing shared
    session_ids = set()
    for spans in traces.values():
        ids = {s.context.span_id: s for s in spans}
        roots = [s for s in spans if s.parent is None]
        assert [r.name for r in roots] == ["r1voice.session"]
        root = roots[0]
        session_ids.add(root.attributes["r1voice.session.id"])
        for span in spans:  # every parent is in the same trace: the trees are disjoint
            assert span.parent is None or span.parent.span_id in ids, span.name
        turns = [s for s in spans if s.name == "r1voice.turn"]
        assert turns and all(parent(t) == root.context.span_id for t in turns)
        turn = turns[0]
        assert turn.attributes["r1voice.turn.number"] == 1
        reason = {"server_vad": "vad", "semantic_vad": "semantic"}[results[0]["detection"]]
        assert turn.attributes["r1voice.turn.end_reason"] == reason
        assert turn.attributes["r1voice.turn.was_interrupted"] is False
        under_turn = {s.name for s in spans if parent(s) == turn.context.span_id}
        assert under_turn >= STAGES_UNDER_TURN, under_turn
        chats = [s for s in spans if s.name.startswith("chat ")]
        assert len(chats) == 1
        chat = chats[0]
        assert parent(chat) == turn.context.span_id
        model = chat.attributes["gen_ai.request.model"]
        assert chat.name == f"chat {model}"
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"].startswith("r1voice.")
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["gen_ai.response.time_to_first_chunk"] > 0
        phases = [s.name for s in spans if parent(s) == chat.context.span_id]
        assert sorted(phases) == ["r1voice.llm.decode", "r1voice.llm.prefill", "r1voice.llm.queue"]
        for span in spans:  # every child within its parent's time
            if span.parent is not None:
                outer = ids[span.parent.span_id]
                assert outer.start_time <= span.start_time, span.name
        # privacy by default: no words in any span
        assert not any("r1voice.transcript" in s.attributes for s in spans)
        assert not any("r1voice.tts.text" in s.attributes for s in spans)
    assert session_ids == {r["id"] for r in results}

    # the reports: newest first, the ids session.created gave, turns with their stages
    reports = telemetry.reports
    assert reports is not None
    assert {r.id for r in reports.recent()} == session_ids
    report = reports.get(results[0]["id"])
    assert report is not None
    wire = report.to_wire()
    assert wire["turns"][0]["end_reason"] == reason
    stage_names = {s["name"] for s in wire["turns"][0]["stages"]}
    assert {"r1voice.stt", "r1voice.llm.prefill", "r1voice.tts"} <= stage_names
    assert [i["role"] for i in wire["items"]] == ["user", "assistant"]
