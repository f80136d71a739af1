"""OpenAI-compatible HTTP: POST /v1/chat/completions (streaming or not), GET /v1/models.

Errors use OpenAI's shape `{"error": {"message", "type", "param", "code"}}`: 400 for a bad
request, 404 for an unknown model, 429 with `Retry-After` when the engine's queue is
full, 503 while warming up. R1 reasoning is returned as `reasoning_content`, as vLLM
does; `priority` (lower runs first) is accepted as vLLM's extension.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from app.llm import (
    ChatMessage,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
)
from app.llm.reasoning import ThinkSplitter
from app.models.components import Components
from app.server.state import HttpState

router = APIRouter(prefix="/v1", tags=["openai"])


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
        kind = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
            status, "server_error"
        )
        super().__init__(
            status,
            {"error": {"message": message, "type": kind, "param": param, "code": code}},
            headers,
        )


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "input_text"]
    text: str


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content)
        return self.content or ""


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = 0
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    priority: int | None = None


def _components(state: HttpState) -> Components:
    if not state.ready or state.components is None:
        raise OpenAIError(
            503,
            "the server is warming up; retry shortly",
            code="not_ready",
            headers={"Retry-After": "2"},
        )
    return state.components


ReadyComponents = Annotated[Components, Depends(_components)]


@router.get("/models")
async def models(state: HttpState) -> dict[str, Any]:
    name = state.settings.llm_model
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": "r1voice"}],
    }


def _params(request: ChatRequest, components: Components) -> GenerationParams:
    if request.n != 1:
        raise OpenAIError(400, "only n=1 is supported", code="invalid_value", param="n")
    served = components.settings.llm_model
    if request.model not in (served, "r1voice"):
        raise OpenAIError(
            404,
            f"model '{request.model}' is not served here; use '{served}'",
            code="model_not_found",
            param="model",
        )
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    return GenerationParams(
        max_tokens=request.max_completion_tokens or request.max_tokens or 512,
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        seed=request.seed,
        priority=request.priority,
        stop=stop,
    )


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    request: ChatRequest, components: ReadyComponents, http: Request
) -> JSONResponse | StreamingResponse:
    params = _params(request, components)
    messages = [
        ChatMessage("system" if m.role == "developer" else m.role, m.text())
        for m in request.messages
    ]
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    stream = _pieces(components.llm, messages, params, completion_id)
    try:  # the first piece surfaces refusals (busy, too long) as HTTP errors, not in-stream
        first = await anext(stream)
    except LLMBusyError as exc:
        raise OpenAIError(
            429,
            str(exc),
            code="server_busy",
            headers={"Retry-After": str(max(1, round(exc.retry_after_s)))},
        ) from exc
    except LLMBackendError as exc:
        param = "messages" if exc.code == "context_length_exceeded" else None
        raise OpenAIError(400, str(exc), code=exc.code, param=param) from exc
    created = int(time.time())
    if request.stream:
        include_usage = bool(request.stream_options and request.stream_options.include_usage)
        return StreamingResponse(
            _sse(first, stream, completion_id, created, request.model, include_usage),
            media_type="text/event-stream",
        )
    content, reasoning = "", ""
    async with contextlib.aclosing(stream):
        piece: Piece | None = first
        try:
            while isinstance(piece, tuple):
                kind, text = piece
                if kind == "content":
                    content += text
                else:
                    reasoning += text
                piece = await anext(stream)
        except LLMBackendError as exc:
            raise OpenAIError(500, str(exc), code=exc.code) from exc
    assert isinstance(piece, LLMDelta)  # _pieces ends with the final delta
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": piece.finish_reason}],
            "usage": _usage(piece),
        }
    )


Piece = tuple[str, str] | LLMDelta


async def _pieces(
    llm: LLMBackend, messages: list[ChatMessage], params: GenerationParams, request_id: str
) -> AsyncGenerator[Piece, None]:
    """("content"|"reasoning", text) pieces, then the backend's final delta (finish reason
    and token counts)."""
    splitter = ThinkSplitter(starts_in_reasoning=llm.prompt_opens_reasoning(messages))
    source = llm.stream_chat(messages, params, request_id)
    async with contextlib.aclosing(source):
        async for delta in source:
            if delta.finished:
                for piece in splitter.flush():
                    yield piece
                yield delta
                return
            for piece in splitter.push(delta.text):
                yield piece
    raise LLMBackendError(f"the {llm.name} backend ended the stream without a finish reason")


def _usage(final: LLMDelta) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": final.prompt_tokens,
        "completion_tokens": final.completion_tokens,
        "total_tokens": final.prompt_tokens + final.completion_tokens,
    }
    if final.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": final.cached_tokens}
    return usage


async def _sse(
    first: Piece,
    rest: AsyncGenerator[Piece, None],
    completion_id: str,
    created: int,
    model: str,
    include_usage: bool,
) -> AsyncIterator[str]:
    def chunk(
        delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
    ) -> str:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    async with contextlib.aclosing(rest):  # a client that disconnects aborts the request
        piece: Piece | None = first
        while piece is not None:
            if isinstance(piece, LLMDelta):
                yield chunk({}, finish=piece.finish_reason)
                if include_usage:
                    yield chunk({}, usage=_usage(piece))
                break
            kind, text = piece
            yield chunk({"content": text} if kind == "content" else {"reasoning_content": text})
            try:
                piece = await anext(rest)
            except LLMBackendError as exc:
                error = {"message": str(exc), "type": "server_error", "code": exc.code}
                yield f"data: {json.dumps({'error': error})}\n\n"
                piece = None
    yield "data: [DONE]\n\n"
