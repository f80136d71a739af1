"""What the OpenAI-compatible routes share (chat in openai_api.py, completions in
completions.py, KServe generate in kserve.py): the error shape, the ready-components
dependency (with the LLM metered for /metrics) and how backend refusals map to HTTP."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException

from app.components import Components
from app.llm import LLMBackendError, LLMBusyError
from app.server.state import HttpState

KINDS = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error"}


class OpenAIError(HTTPException):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        kind = KINDS.get(status, "server_error")
        super().__init__(
            status,
            {"error": {"message": message, "type": kind, "param": param, "code": code}},
            headers,
        )


def ready_components(state: HttpState) -> Components:
    if state.drain.draining:
        raise OpenAIError(
            503,
            "the server is shutting down; retry (another replica will answer)",
            code="shutting_down",
            headers={"Retry-After": "1"},
        )
    if not state.ready or state.components is None:
        raise OpenAIError(
            503,
            "the server is warming up; retry shortly",
            code="not_ready",
            headers={"Retry-After": "2"},
        )
    return state.metrics.metered(state.components)


ReadyComponents = Annotated[Components, Depends(ready_components)]


def check_http_priority(priority: int | None, floor: int) -> None:
    """Priorities below `floor` are the voice sessions' class (the engine's reserve and
    preemption): an HTTP caller may not outrank a spoken turn."""
    if priority is not None and priority < floor:
        raise OpenAIError(
            400,
            f"priority must be >= {floor} over HTTP, got {priority} (lower values are "
            "reserved for voice sessions; R1VOICE_HTTP_PRIORITY_FLOOR sets the floor)",
            code="invalid_value",
            param="priority",
        )


def refusal(exc: LLMBackendError, param: str | None = None) -> OpenAIError:
    """A refusal before the first token: 429 busy (with Retry-After), 503 when the
    remote LLM is down, else 400 (`param` named for a context that does not fit)."""
    if isinstance(exc, LLMBusyError):
        retry = str(max(1, round(exc.retry_after_s)))
        return OpenAIError(429, str(exc), code="server_busy", headers={"Retry-After": retry})
    if exc.code == "llm_unavailable":
        return OpenAIError(503, str(exc), code=exc.code, headers={"Retry-After": "2"})
    where = param if exc.code == "context_length_exceeded" else None
    return OpenAIError(400, str(exc), code=exc.code, param=where)


def check_model(requested: str, components: Components) -> None:
    check_model_name(requested, components.settings.llm_model)


def check_model_name(requested: str, served: str) -> None:
    """404 `model_not_found` unless `requested` is the served model or "r1voice"."""
    if requested not in (served, "r1voice"):
        raise OpenAIError(
            404,
            f"model '{requested}' is not served here; use '{served}' (the HTTP API serves "
            "R1VOICE_LLM_MODEL's; a Realtime session switches with session.update's model)",
            code="model_not_found",
            param="model",
        )
