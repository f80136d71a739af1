"""Tracing (OpenTelemetry, GenAI conventions) and session reports: what the server and
its sessions import. Off and free unless an OTLP endpoint is set or reports are kept."""

from app.telemetry.reports import SessionReport, SessionReports
from app.telemetry.session_trace import SessionTrace
from app.telemetry.telemetry import OFF, Telemetry
from app.telemetry.traced_models import traced_asr, traced_llm, traced_voices
from app.telemetry.traced_session import TracedSession

__all__ = [
    "OFF",
    "SessionReport",
    "SessionReports",
    "SessionTrace",
    "Telemetry",
    "TracedSession",
    "traced_asr",
    "traced_llm",
    "traced_voices",
]
