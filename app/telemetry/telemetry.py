"""The server's tracing: its tracer provider (an OTLP exporter when an endpoint is
configured, the session reports' span processor when reports are kept), and one
SessionTrace per session. With no endpoint and no reports there is no provider at all:
every session gets the SessionTrace that does nothing."""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from app.recording import RecordingStore
from app.telemetry.exporter import CountingExporter, endpoint_from_env, otlp_exporter
from app.telemetry.reports import SessionReports
from app.telemetry.session_trace import SessionTrace
from app.telemetry.traced_session import TracedSession

log = logging.getLogger("r1voice.telemetry")
OFF = SessionTrace()


class Telemetry:
    """`exporter`: where spans go (None: nowhere); `reports`: recent sessions' reports
    kept (0: none); `content`: transcripts, answers and tool data in spans;
    `recordings`: where every session is recorded (None: not recorded)."""

    def __init__(
        self,
        exporter: SpanExporter | None = None,
        reports: int = 0,
        content: bool = False,
        batch: bool = True,
        recordings: RecordingStore | None = None,
        recording_max_s: float = 3600.0,
    ) -> None:
        self.content = content
        self.recordings, self.recording_max_s = recordings, recording_max_s
        self.reports = SessionReports(reports) if reports > 0 else None
        self.exporter = CountingExporter(exporter) if exporter is not None else None
        self.provider: TracerProvider | None = None
        processors: list[SpanProcessor] = [p for p in (self.reports,) if p is not None]
        if self.exporter is not None:
            if batch:
                processors.append(BatchSpanProcessor(self.exporter))
            else:  # tests: each span exported as it ends
                from opentelemetry.sdk.trace.export import SimpleSpanProcessor

                processors.append(SimpleSpanProcessor(self.exporter))
        if processors:
            self.provider = TracerProvider(resource=Resource.create({"service.name": "r1voice"}))
            for processor in processors:
                self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("r1voice") if self.provider else None
        # HTTP requests' spans only go somewhere with an exporter (reports are sessions')
        self.http_tracer = self.tracer if self.exporter is not None else None

    @classmethod
    def from_settings(cls, settings: Any) -> Telemetry:
        endpoint = endpoint_from_env(settings.otel_endpoint)
        exporter = otlp_exporter(endpoint) if endpoint else None
        if exporter is not None:
            log.info("tracing to %s", endpoint)
        recordings = None
        if settings.record_sessions:
            recordings = RecordingStore(
                settings.recordings_dir, settings.recordings_keep, settings.recordings_min_free_mb
            )
        return cls(
            exporter,
            settings.session_reports,
            settings.trace_content,
            recordings=recordings,
            recording_max_s=settings.recording_max_s,
        )

    @property
    def dropped_spans(self) -> int:
        return self.exporter.dropped if self.exporter is not None else 0

    def session(self, parent: Any = None) -> SessionTrace:
        """A new session's trace (`parent`: a context it joins, e.g. a traceparent's)."""
        if self.tracer is None:
            return (
                SessionTrace(None, self.recordings, self.recording_max_s)
                if self.recordings
                else OFF
            )
        return TracedSession(
            self.tracer, self.content, self.reports, parent, self.recordings, self.recording_max_s
        )

    def shutdown(self) -> None:
        """Export what is queued (bounded by the exporter's timeout) and stop."""
        if self.provider is not None:
            self.provider.shutdown()
