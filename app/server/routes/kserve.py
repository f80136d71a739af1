"""KServe v2 / Triton metadata and Triton's generate extension.

GET /v2 (server metadata), GET /v2/models/{name} (model metadata),
POST /v2/models/{name}/generate and /generate_stream: `{"text_input", "parameters"}` ->
`{"model_name", "model_version", "text_output"}` (the stream: SSE, one event per
delta, `text_output` being the new text; the last event adds `finish_reason`).
`text_input` is a raw prompt (no chat template), as Triton's vLLM backend takes it; the
output is the generated text only. Errors: `{"error": "..."}` with 400, 404, 429
(`Retry-After`), 503. Liveness and readiness are in health.py.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.components import Components
from app.llm import GenerationParams, LLMBackendError, LLMDelta
from app.server.routes.completions import first_delta
from app.server.routes.health import served_models
from app.server.routes.openai_common import OpenAIError, check_http_priority, ready_components
from app.server.routes.openai_schemas import Priority, Seed, TopK
from app.server.state import HttpState

router = APIRouter(prefix="/v2", tags=["kserve"])
VERSION = "1"
EXTENSIONS = ["generate", "model_repository(health only)"]


class GenerateParameters(BaseModel):
    model_config = ConfigDict(extra="ignore")
    max_tokens: int = Field(default=128, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: TopK = 0
    seed: Seed = None
    stop: str | list[str] | None = None
    priority: Priority = None


class GenerateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text_input: str = Field(min_length=1)
    parameters: GenerateParameters = GenerateParameters()


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


@router.get("")
async def server_metadata(state: HttpState) -> dict[str, Any]:
    return {"name": "r1voice", "version": "0.1.0", "extensions": EXTENSIONS}


@router.get("/models/{name}")
async def model_metadata(name: str, state: HttpState) -> JSONResponse:
    if name not in served_models(state):
        return _error(
            404, f"model '{name}' is not served here; served: {sorted(served_models(state))}"
        )
    is_llm = name in (state.settings.llm_model, "r1voice")
    tensors: dict[str, Any] = {"inputs": [], "outputs": []}
    if is_llm:
        tensors = {
            "inputs": [
                {"name": "text_input", "datatype": "BYTES", "shape": [1]},
                {"name": "max_tokens", "datatype": "INT32", "shape": [1], "optional": True},
                {"name": "temperature", "datatype": "FP32", "shape": [1], "optional": True},
                {"name": "stream", "datatype": "BOOL", "shape": [1], "optional": True},
            ],
            "outputs": [{"name": "text_output", "datatype": "BYTES", "shape": [-1]}],
        }
    platform = f"r1voice_{'llm_' + state.settings.llm_backend if is_llm else 'speech'}"
    return JSONResponse({"name": name, "versions": [VERSION], "platform": platform, **tensors})


async def _start(
    name: str, body: dict[str, Any], state: Any
) -> tuple[AsyncGenerator[LLMDelta, None], LLMDelta]:
    if name not in (state.settings.llm_model, "r1voice"):
        detail = "is not served here" if name not in served_models(state) else "generates no text"
        raise OpenAIError(404, f"model '{name}' {detail}", code="model_not_found")
    components: Components = ready_components(state)
    try:
        request = GenerateRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise OpenAIError(400, f"{where}: {first['msg']}", code="invalid_value") from exc
    p = request.parameters
    check_http_priority(p.priority, state.settings.http_priority_floor)
    stop = (p.stop,) if isinstance(p.stop, str) else tuple(p.stop or ())
    params = GenerationParams(
        max_tokens=p.max_tokens,
        temperature=p.temperature,
        top_p=p.top_p,
        top_k=p.top_k,
        seed=p.seed,
        priority=p.priority,
        stop=stop,
    )
    stream = components.llm.stream_text(request.text_input, params, f"kserve-{uuid.uuid4().hex}")
    return stream, await first_delta(stream, "text_input")


def _as_kserve(exc: OpenAIError) -> JSONResponse:
    detail: Any = exc.detail
    return _error(exc.status_code, detail["error"]["message"], dict(exc.headers or {}))


@router.post("/models/{name}/generate")
async def generate(name: str, body: dict[str, Any], state: HttpState) -> JSONResponse:
    try:
        stream, delta = await _start(name, body, state)
        text = ""
        async with contextlib.aclosing(stream):
            while not delta.finished:
                text += delta.text
                delta = await anext(stream)
    except OpenAIError as exc:
        return _as_kserve(exc)
    except (LLMBackendError, StopAsyncIteration) as exc:
        return _error(500, f"the backend failed mid-answer: {exc}")
    out = {"model_name": name, "model_version": VERSION, "text_output": text}
    return JSONResponse({**out, "finish_reason": delta.finish_reason})


@router.post("/models/{name}/generate_stream", response_model=None)
async def generate_stream(
    name: str, body: dict[str, Any], state: HttpState
) -> JSONResponse | StreamingResponse:
    try:
        stream, first = await _start(name, body, state)
    except OpenAIError as exc:
        return _as_kserve(exc)
    return StreamingResponse(_events(name, first, stream), media_type="text/event-stream")


async def _events(
    name: str, first: LLMDelta, rest: AsyncGenerator[LLMDelta, None]
) -> AsyncIterator[str]:
    head = {"model_name": name, "model_version": VERSION}
    delta: LLMDelta | None = first
    async with contextlib.aclosing(rest):  # a client that disconnects aborts the request
        while delta is not None:
            event: dict[str, Any] = {**head, "text_output": delta.text}
            if delta.finished:
                event["finish_reason"] = delta.finish_reason
            yield f"data: {json.dumps(event)}\n\n"
            if delta.finished:
                break
            try:
                delta = await anext(rest)
            except (LLMBackendError, StopAsyncIteration) as exc:
                yield f"data: {json.dumps({'error': f'the backend failed mid-answer: {exc}'})}\n\n"
                delta = None
