"""execute_tool spans from a session's tool-call events (the events the responses emit),
on the real OpenTelemetry SDK: a function call until the client's output, an MCP call
until the server's call ended; arguments and results only with content traced."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.protocol.server_events import (
    FunctionCallArgumentsDone,
    ItemCreated,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    OutputItemAdded,
    OutputItemDone,
)
from app.telemetry.tool_spans import ToolSpans


def tool_spans(content: bool) -> tuple[ToolSpans, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    turn = tracer.start_span("r1voice.turn")
    return ToolSpans(tracer, content, lambda _rid: turn), exporter


def test_a_function_call_lasts_until_the_clients_output() -> None:
    spans, exporter = tool_spans(content=True)
    spans.event(
        FunctionCallArgumentsDone(
            call_id="call_1",
            name="get_weather",
            arguments='{"city": "Paris"}',
            response_id="resp_1",
            item_id="item_1",
            output_index=1,
        )
    )
    assert exporter.get_finished_spans() == ()
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    spans.event(ItemCreated(previous_item_id="item_1", item=output))
    [span] = exporter.get_finished_spans()
    assert span.name == "execute_tool get_weather"
    assert span.parent is not None  # under the turn
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": "sunny",
    }


def test_mcp_calls_end_with_the_call_and_a_failure_is_an_error_without_content() -> None:
    async def run() -> InMemorySpanExporter:
        spans, exporter = tool_spans(content=False)
        for item_id, done in (("item_ok", McpCallCompleted), ("item_bad", McpCallFailed)):
            item = {"type": "mcp_call", "id": item_id, "name": "add", "server_label": "calc"}
            spans.event(OutputItemAdded(response_id="resp_1", output_index=0, item=item))
            spans.event(McpCallInProgress(item_id=item_id, output_index=0))
            spans.event(done(item_id=item_id, output_index=0))
            result = {**item, "output": "3"}
            spans.event(OutputItemDone(response_id="resp_1", output_index=0, item=result))
            await asyncio.sleep(0)  # the span ends after the item's events of that step
        return exporter

    exporter = asyncio.run(run())
    ok, bad = exporter.get_finished_spans()
    assert ok.name == bad.name == "execute_tool add"
    assert ok.attributes["gen_ai.tool.type"] == "extension"
    assert ok.attributes["r1voice.mcp.server_label"] == "calc"
    assert "gen_ai.tool.call.arguments" not in ok.attributes  # privacy by default
    assert "gen_ai.tool.call.result" not in ok.attributes
    assert ok.status.is_ok and not bad.status.is_ok
