"""HTTP requests join the caller's trace: with a W3C `traceparent` header the request's
server span is a child of the caller's span; without one it starts a trace of its own.
Only while spans are exported somewhere (a collector is configured); otherwise the
middleware passes requests through untouched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
PROPAGATOR = TraceContextTextMapPropagator()


def incoming_context(headers: list[tuple[bytes, bytes]]) -> Context | None:
    """The caller's trace context from `traceparent` (and `tracestate`); None without one."""
    carrier = {
        k.decode("latin-1").lower(): v.decode("latin-1")
        for k, v in headers
        if k.lower() in (b"traceparent", b"tracestate")
    }
    if "traceparent" not in carrier:
        return None
    context = PROPAGATOR.extract(carrier, context=Context())
    return context if trace.get_current_span(context).get_span_context().is_valid else None


class TraceRequests:
    """ASGI middleware: one server span per HTTP request (the server's Telemetry is read
    from app.state.server at each request, so a test may swap it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        telemetry = getattr(getattr(scope.get("app"), "state", None), "server", None)
        tracer = getattr(getattr(telemetry, "telemetry", None), "http_tracer", None)
        if scope["type"] != "http" or tracer is None:
            await self.app(scope, receive, send)
            return
        method, path = scope.get("method", ""), scope.get("path", "")
        parent = incoming_context(scope.get("headers", [])) or Context()
        span = tracer.start_span(
            f"{method} {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            span.end()
