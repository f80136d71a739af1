"""KServe v2 health endpoints (what Triton and Kubernetes probes use).

Readiness says the truth: 503 until models are loaded and warmed up, and 503 while the
LLM backend cannot serve (a remote LLM that is down), with the reason in `error`.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.server.state import HttpState, ServerState

router = APIRouter(prefix="/v2", tags=["health"])


async def not_ready_reason(state: ServerState, llm: bool = True) -> str | None:
    """Why the server (or, with `llm` False, its speech models) cannot serve now."""
    if state.load_error:
        return state.load_error
    if state.drain.draining:
        return "shutting down: finishing the open turns"
    if not state.ready or state.components is None:
        return "loading and warming up models"
    return await state.components.llm.health() if llm else None


def served_models(state: ServerState) -> set[str]:
    settings = state.settings
    return {settings.llm_model, settings.asr_model, settings.tts_voice, "r1voice"}


@router.get("/health/live")
async def live(state: HttpState) -> JSONResponse:
    """200 while the process can serve; 503 once it cannot recover (the engine's loop
    died), so an orchestrator restarts it."""
    fatal = state.components.llm.fatal_error() if state.components is not None else None
    if fatal is not None:
        return JSONResponse({"live": False, "error": fatal}, status_code=503)
    return JSONResponse({"live": True})


@router.get("/health/ready")
async def ready(state: HttpState) -> JSONResponse:
    """200 once models are loaded and warmed up (and a remote LLM answers), else 503."""
    reason = await not_ready_reason(state)
    body: dict[str, object] = {"ready": reason is None}
    if reason is not None and (state.ready or state.load_error):
        body["error"] = reason
    return JSONResponse(body, status_code=200 if reason is None else 503)


@router.get("/models/{model}/ready")
async def model_ready(model: str, state: HttpState) -> JSONResponse:
    """Ready state of one model: the LLM, ASR or TTS model this server runs."""
    served = served_models(state)
    if model not in served:
        return JSONResponse(
            {"error": f"model '{model}' is not served here; served: {sorted(served)}"},
            status_code=404,
        )
    speech = model in (state.settings.asr_model, state.settings.tts_voice)
    reason = await not_ready_reason(state, llm=not speech)
    body: dict[str, object] = {"name": model, "ready": reason is None}
    if reason is not None and state.ready:
        body["error"] = reason
    return JSONResponse(body, status_code=200 if reason is None else 503)
