"""Prometheus scrape endpoint."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.server.state import HttpState

router = APIRouter(tags=["metrics"])


@router.get("/metrics")
async def metrics(state: HttpState) -> Response:
    state.metrics.ready.set(1 if state.ready else 0)
    state.metrics.sessions.set(len(state.sessions))
    state.metrics.llm.model_name = state.settings.llm_model
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
