"""The FastAPI app: factory and lifespan (load models, warm up, then turn ready)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from app import components as components_module
from app.server import client_noise
from app.server.access import AccessGuard, AccessPolicy, DeniedHandshakeLog
from app.server.body_limit import BodyLimit
from app.server.client_rates import ClientRates
from app.server.json_body import JsonByDefault
from app.server.routes import (
    client_secrets,
    completions,
    health,
    kserve,
    live,
    metrics,
    openai_api,
    page,
    realtime,
    sessions,
    telephony,
    webrtc,
    xiaozhi,
)
from app.server.routes import components as components_route
from app.server.state import ServerState
from app.settings import Settings
from app.telemetry.http import TraceRequests

log = logging.getLogger("r1voice")


async def _load_and_warm(state: ServerState) -> None:
    """Load and warm up in the background: liveness answers at once, readiness after."""
    try:
        loaded = await asyncio.to_thread(components_module.load_components, state.settings)
        if state.settings.warmup:
            await asyncio.to_thread(components_module.warm_up, loaded)
        state.components = loaded
        state.metrics.watch_llm(loaded.llm.stats)
        state.ready_after_s = round(time.monotonic() - state.started_at, 3)
        state.ready = True
        log.info("serving %s", loaded.describe())
        log.info("ready after %.2f s (%s)", state.ready_after_s, loaded.timings)
    except Exception as exc:
        state.load_error = f"{type(exc).__name__}: {exc}"
        log.error("model loading failed: %s", state.load_error)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app. Models load in the lifespan; readiness turns true after warm-up."""
    state = ServerState(settings=settings or Settings.from_env())
    client_noise.install()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loader = asyncio.create_task(_load_and_warm(state))
        try:
            yield
        finally:
            loader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await loader
            await state.peers.close()
            await state.heap.close()
            await asyncio.to_thread(state.telemetry.shutdown)  # the last spans, bounded
            if state.components is not None:
                await components_module.close_components(state.components)

    app = FastAPI(title="r1voice", version="0.1.0", lifespan=lifespan)
    app.state.server = state
    app.include_router(health.router)
    app.include_router(realtime.router)
    app.include_router(live.router)
    app.include_router(metrics.router)
    app.include_router(openai_api.router)
    app.include_router(completions.router)
    app.include_router(kserve.router)
    app.include_router(components_route.router)
    app.include_router(client_secrets.router)
    app.include_router(webrtc.router)
    app.include_router(sessions.router)
    app.include_router(xiaozhi.router)
    app.include_router(telephony.router)
    policy = AccessPolicy.from_settings(state.settings)
    DeniedHandshakeLog.install()
    settings = state.settings
    app.add_middleware(JsonByDefault)  # innermost: the routes read the body it names
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    # added after the body limit, so it runs before it: nobody unauthorized sends a body
    app.add_middleware(AccessGuard, policy=policy, client_secrets=state.client_secrets)
    app.add_middleware(TraceRequests)  # joins a caller's traceparent (with a collector)
    # outermost: unauthenticated attempts (key guessing) count against the rate too
    app.add_middleware(
        ClientRates,
        requests_per_s=settings.client_requests_per_s,
        burst=settings.client_burst,
        sessions=settings.client_max_sessions,
    )

    @app.exception_handler(openai_api.OpenAIError)
    async def openai_error(request: Request, exc: openai_api.OpenAIError) -> JSONResponse:
        return JSONResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first: dict[str, Any] = (
            exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        )
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        message = f"{where}: {first['msg']}" if where else str(first["msg"])
        if first.get("type") == "json_invalid":  # its location is a character offset
            why = (first.get("ctx") or {}).get("error", "JSON decode error")
            where, message = "", f"the request body is not valid JSON ({why}); send a JSON object"
        return JSONResponse(
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": where or None,
                    "code": "invalid_value",
                }
            },
            status_code=400,
        )

    app.include_router(page.router)
    app.mount("/web", StaticFiles(directory=page.WEB_DIR), name="web")
    app.mount("/static", StaticFiles(directory=page.STATIC_DIR, check_dir=False), name="static")
    return app
