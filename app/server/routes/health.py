"""KServe v2 health endpoints (what Triton and Kubernetes probes use)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.server.state import HttpState

router = APIRouter(prefix="/v2", tags=["health"])


@router.get("/health/live")
async def live() -> JSONResponse:
    """200 while the process runs."""
    return JSONResponse({"live": True})


@router.get("/health/ready")
async def ready(state: HttpState) -> JSONResponse:
    """200 once models are loaded and warmed up, 503 before (or if loading failed)."""
    body = {"ready": state.ready}
    if state.load_error:
        body["error"] = state.load_error  # type: ignore[assignment]
    return JSONResponse(body, status_code=200 if state.ready else 503)


@router.get("/models/{model}/ready")
async def model_ready(model: str, state: HttpState) -> JSONResponse:
    """Ready state of one model: the LLM, ASR or TTS model this server runs."""
    settings = state.settings
    served = {settings.llm_model, settings.asr_model, settings.tts_voice, "r1voice"}
    if model not in served:
        return JSONResponse(
            {"error": f"model '{model}' is not served here; served: {sorted(served)}"},
            status_code=404,
        )
    return JSONResponse(
        {"name": model, "ready": state.ready}, status_code=200 if state.ready else 503
    )
