"""Where spans go when tracing is configured: OTLP over HTTP/protobuf (or gRPC when
OTEL_EXPORTER_OTLP_PROTOCOL=grpc), batched on the SDK's own thread, so a slow or
unreachable collector never holds a session up; what it refuses is dropped and counted."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("r1voice.telemetry")
EXPORT_TIMEOUT_S = 2.0  # a collector that does not answer in this long loses the batch


def endpoint_from_env(configured: str) -> str:
    """R1VOICE_OTEL_ENDPOINT (the setting), else OTEL_EXPORTER_OTLP_ENDPOINT; "": off."""
    return configured or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")


def otlp_exporter(endpoint: str, protocol: str | None = None) -> SpanExporter:
    """An OTLP exporter to the collector at `endpoint` (its base URL, e.g.
    http://localhost:4318; for gRPC host:port)."""
    protocol = protocol or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)
    if protocol != "http/protobuf":
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: "
            "use http/protobuf (the default) or grpc"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    return OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT_S)


class CountingExporter(SpanExporter):
    """`inner`, counting the spans it failed to deliver (logged once, then every 100th
    failed batch: a collector that is down must not flood the log)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.dropped = 0
        self.failed_batches = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter bug must not kill the export thread
            log.debug("span export raised", exc_info=exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
            return result
        self.dropped += len(spans)
        if self.failed_batches % 100 == 0:
            log.warning(
                "the trace collector did not take %d spans (%d dropped so far); "
                "check R1VOICE_OTEL_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT",
                len(spans),
                self.dropped,
            )
        self.failed_batches += 1
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
