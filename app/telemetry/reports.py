"""Recent sessions' reports, made of their own finished spans (no second bookkeeping):
the turns and each turn's stages with their times, the conversation's items, and the
recording's URL when the session was recorded. Bounded: the newest `keep` sessions, and
at most MAX_SPANS spans each."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

MAX_SPANS = 5000  # a session's report keeps its first spans past this (hours of turns)
Wire = dict[str, Any]


@dataclass
class SessionReport:
    id: str
    trace_id: str
    started_ns: int = field(default_factory=time.time_ns)
    ended_ns: int | None = None
    items: list[Wire] = field(default_factory=list)
    recording: str | None = None  # the recording's URL path, when recorded
    spans: list[Wire] = field(default_factory=list)
    spans_dropped: int = 0

    def add(self, span: ReadableSpan) -> None:
        if len(self.spans) >= MAX_SPANS:
            self.spans_dropped += 1
            return
        context = span.get_span_context()
        parent = span.parent.span_id if span.parent is not None else None
        start, end = span.start_time or 0, span.end_time or 0
        self.spans.append(
            {
                "name": span.name,
                "span_id": f"{context.span_id:016x}" if context else "",
                "parent_id": None if parent is None else f"{parent:016x}",
                "start_ms": round((start - self.started_ns) / 1e6, 1),
                "duration_ms": round((end - start) / 1e6, 1),
                "attributes": dict(span.attributes or {}),
            }
        )

    def summary(self) -> Wire:
        return {
            "id": self.id,
            "trace_id": self.trace_id,
            "started_at": self.started_ns / 1e9,
            "ended_at": None if self.ended_ns is None else self.ended_ns / 1e9,
            "turns": sum(1 for s in self.spans if s["name"] == "r1voice.turn"),
            "recording_url": self.recording,
        }

    def to_wire(self) -> Wire:
        """The summary, the items, and each turn with its stages (descendants, in order)."""
        children: dict[str | None, list[Wire]] = {}
        for span in self.spans:
            children.setdefault(span["parent_id"], []).append(span)
        turns = []
        for span in sorted(
            (s for s in self.spans if s["name"] == "r1voice.turn"), key=lambda s: s["start_ms"]
        ):
            stages = _descendants(span["span_id"], children)
            attrs = span["attributes"]
            turns.append(
                {
                    "number": attrs.get("r1voice.turn.number"),
                    "start_ms": span["start_ms"],
                    "duration_ms": span["duration_ms"],
                    "end_reason": attrs.get("r1voice.turn.end_reason"),
                    "was_interrupted": attrs.get("r1voice.turn.was_interrupted"),
                    "attributes": attrs,
                    "stages": sorted(stages, key=lambda s: s["start_ms"]),
                }
            )
        return {
            **self.summary(),
            "items": self.items,
            "turns": turns,
            "spans_dropped": self.spans_dropped,
        }


def _descendants(span_id: str, children: dict[str | None, list[Wire]]) -> list[Wire]:
    found, stack = [], list(children.get(span_id, []))
    while stack:
        span = stack.pop()
        found.append(span)
        stack.extend(children.get(span["span_id"], []))
    return found


class SessionReports(SpanProcessor):
    """The reports of the newest `keep` sessions; fed every finished span (a span
    processor on the server's tracer provider)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._reports: OrderedDict[str, SessionReport] = OrderedDict()
        self._by_trace: dict[int, SessionReport] = {}

    def open(self, session_id: str, trace_id: int) -> SessionReport:
        report = SessionReport(session_id, f"{trace_id:032x}")
        self._reports[session_id] = report
        self._by_trace[trace_id] = report
        while len(self._reports) > self.keep:
            _, old = self._reports.popitem(last=False)
            self._by_trace.pop(int(old.trace_id, 16), None)
        return report

    def close(self, session_id: str, items: list[Wire]) -> None:
        report = self._reports.get(session_id)
        if report is not None:
            report.items, report.ended_ns = items, time.time_ns()

    def recorded(self, session_id: str, url: str) -> None:
        report = self._reports.get(session_id)
        if report is not None:
            report.recording = url

    def recent(self) -> list[SessionReport]:
        """Newest first."""
        return list(reversed(self._reports.values()))

    def get(self, session_id: str) -> SessionReport | None:
        return self._reports.get(session_id)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        report = self._by_trace.get(context.trace_id) if context is not None else None
        if report is not None:
            report.add(span)
