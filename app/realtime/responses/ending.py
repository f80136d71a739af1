"""How a response ended, as its `response.done` says it: the status details of a cut,
cancelled or failed answer, and the `error` event a failure also sends."""

from __future__ import annotations

import logging

from app.llm import LLMBackendError
from app.protocol.server_events import Error, Wire

log = logging.getLogger("r1voice.response")

# cut by max_output_tokens, yet spoken to its end
INCOMPLETE: Wire = {"type": "incomplete", "reason": "max_output_tokens"}


def cancelled(reason: str) -> Wire:
    """`reason`: "turn_detected" (barge-in), "client_cancelled", "server_shutdown",
    "session_expired" or "discarded" (an early answer never shown)."""
    return {"type": "cancelled", "reason": reason}


def failure(exc: Exception, response_id: str, event_id: str | None) -> tuple[Error, Wire]:
    """The `error` event of a response that failed, and its status details. `event_id`:
    the client's `response.create`, if it asked for the response."""
    code = exc.code if isinstance(exc, LLMBackendError) else "server_error"
    if code == "server_error":
        log.exception("response %s failed", response_id)
    # The client's to fix (a prompt too long, a bad parameter) or the server's.
    client_side = code in ("llm_error", "context_length_exceeded")
    kind = "invalid_request_error" if client_side else "server_error"
    message = f"the response failed: {exc}"
    error = Error(code=code, message=message, kind=kind, client_event_id=event_id)
    return error, {"type": "failed", "error": {"code": code, "message": str(exc)}}


def speech_failed(exc: Exception, response_id: str) -> Error:
    """The voice failed; the words stand, so the answer goes on as text only."""
    log.warning("response %s: speech synthesis failed: %s", response_id, exc)
    message = f"speech synthesis failed ({exc}); this answer is text only"
    return Error(code="tts_failed", message=message, kind="server_error")
