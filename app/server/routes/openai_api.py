"""OpenAI-compatible HTTP: POST /v1/chat/completions (streaming or not), GET /v1/models.

Errors use OpenAI's shape `{"error": {"message", "type", "param", "code"}}`: 400 for a bad
request, 404 for an unknown model, 429 with `Retry-After` when the engine's queue is
full, 503 while warming up. R1 reasoning is returned as `reasoning_content`, as vLLM
does; `priority` (lower runs first) is accepted as vLLM's extension, and R1's thinking
is bounded by `max_reasoning_tokens` or OpenAI's `reasoning_effort` (openai_schemas.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from app.components import Components
from app.llm import (
    ChatMessage,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMDelta,
)
from app.llm.reasoning import ThinkSplitter
from app.llm.tool_calls import (
    CLOSE,
    OPEN,
    InvalidToolCall,
    ToolCallSplitter,
    ToolSpec,
    parse_call,
    tagged,
    tools_prompt,
)
from app.server.routes.openai_common import (
    OpenAIError,
    ReadyComponents,
    check_http_priority,
    check_model,
    check_model_name,
    refusal,
)
from app.server.routes.openai_schemas import ChatRequest
from app.server.state import HttpState
from app.tools.chat_rounds import McpListingFailed, mcp_rounds, request_tools
from app.tools.mcp_toolset import McpToolRef, McpToolset
from app.tools.policy import McpPolicy

router = APIRouter(prefix="/v1", tags=["openai"])


STARTED = int(time.time())  # a model card's `created`: when this server process started


def _card(state: HttpState) -> dict[str, Any]:
    card: dict[str, Any] = {"id": state.settings.llm_model, "object": "model"}
    card |= {"created": STARTED, "owned_by": "r1voice"}
    if state.ready and state.components is not None:  # as vLLM's card says it
        card["max_model_len"] = state.components.llm.context_length
    return card


@router.get("/models")
async def models(state: HttpState) -> dict[str, Any]:
    return {"object": "list", "data": [_card(state)]}


@router.get("/models/{model_id:path}")
async def model(model_id: str, state: HttpState) -> dict[str, Any]:
    """OpenAI's `models.retrieve`: the served model's card (also by the name "r1voice")."""
    check_model_name(model_id, state.settings.llm_model)
    return _card(state)


def _params(request: ChatRequest, components: Components) -> GenerationParams:
    if request.n != 1:
        raise OpenAIError(400, "only n=1 is supported", code="invalid_value", param="n")
    if (refused := request.unsupported()) is not None:
        raise OpenAIError(400, refused[1], code="invalid_value", param=refused[0])
    check_model(request.model, components)
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    return GenerationParams(
        max_tokens=request.max_completion_tokens or request.max_tokens or 512,
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        seed=request.seed,
        priority=request.priority,
        stop=stop,
        max_reasoning_tokens=request.reasoning_budget(),
        ignore_eos=request.ignore_eos,
    )


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    request: ChatRequest, components: ReadyComponents, state: HttpState, http: Request
) -> JSONResponse | StreamingResponse:
    check_http_priority(request.priority, state.settings.http_priority_floor)
    params = _params(request, components)
    messages = [
        ChatMessage("system" if m.role == "developer" else m.role, m.text())
        for m in request.messages
    ]
    tools = request.tool_specs() if request.choice() != "none" else []
    toolset, refs = await _mcp_tools(request, state)
    tools += [ref.spec for ref in refs]
    offer = tools_prompt(tools, request.choice())
    if offer:  # the tools go into the system prompt, in the model's own format
        if messages[0].role == "system":
            messages[0] = ChatMessage("system", messages[0].content + offer)
        else:
            messages.insert(0, ChatMessage("system", offer.lstrip()))
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    stream = _pieces(components.llm, messages, params, completion_id, tools)
    if toolset is not None:  # the server calls the MCP tools and answers again
        answer = functools.partial(_pieces, components.llm, params=params, tools=tools)
        stream = mcp_rounds(lambda m: answer(m, request_id=completion_id), messages, refs, toolset)
    try:  # the first piece surfaces refusals (busy, too long) as HTTP errors, not in-stream
        first = await anext(stream)
    except LLMBackendError as exc:
        raise refusal(exc, "messages") from exc
    created = int(time.time())
    if request.stream:
        include_usage = bool(request.stream_options and request.stream_options.include_usage)
        return StreamingResponse(
            _sse(first, stream, completion_id, created, request.model, include_usage),
            media_type="text/event-stream",
        )
    content, reasoning, calls = "", "", []
    async with contextlib.aclosing(stream):
        piece: Piece | None = first
        try:
            while isinstance(piece, tuple):
                kind, text = piece
                if kind == "content":
                    content += text
                elif kind == "tool_call":
                    calls.append(json.loads(text))
                else:
                    reasoning += text
                piece = await anext(stream)
        except LLMBackendError as exc:
            raise OpenAIError(500, str(exc), code=exc.code) from exc
    assert isinstance(piece, LLMDelta)  # _pieces ends with the final delta
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content or None if calls else content,
    }
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(piece, calls)}],
            "usage": _usage(piece),
        }
    )


Piece = tuple[str, str] | LLMDelta


async def _mcp_tools(
    request: ChatRequest, state: HttpState
) -> tuple[McpToolset | None, list[McpToolRef]]:
    servers = request.mcp_servers() if request.choice() != "none" else []
    if not servers:
        return None, []
    try:
        return await request_tools(servers, McpPolicy.from_settings(state.settings))
    except McpListingFailed as exc:
        status = 400 if exc.client_fault else 502
        raise OpenAIError(status, str(exc), code=exc.code, param="tools") from exc


def _finish(final: LLMDelta, calls: list[Any]) -> str | None:
    return "tool_calls" if calls and final.finish_reason == "stop" else final.finish_reason


async def _pieces(
    llm: LLMBackend,
    messages: list[ChatMessage],
    params: GenerationParams,
    request_id: str,
    tools: list[ToolSpec],
) -> AsyncGenerator[Piece, None]:
    """("content"|"reasoning"|"tool_call", text) pieces, then the backend's final delta
    (finish reason and token counts). A tool call's text is OpenAI's `tool_calls` entry
    as JSON; a call that does not parse or match is left in the content."""
    splitter = ThinkSplitter(starts_in_reasoning=llm.prompt_opens_reasoning(messages))
    calls = ToolCallSplitter() if tools else None

    def route(pieces: list[tuple[str, str]], last: bool = False) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for kind, text in pieces:
            if kind != "content" or calls is None:
                out.append((kind, text))
                continue
            for part, piece in calls.push(text):
                is_call = part != "content"
                out.append(_tool_piece(piece, tools, tagged(part)) if is_call else (part, piece))
        if last and calls is not None:
            out += calls.flush()
        return out

    source = llm.stream_chat(messages, params, request_id)
    async with contextlib.aclosing(source):
        async for delta in source:
            if delta.finished:
                for piece in route(splitter.flush(), last=True):
                    yield piece
                yield delta
                return
            for piece in route(splitter.push(delta.text)):
                yield piece
    raise LLMBackendError(f"the {llm.name} backend ended the stream without a finish reason")


def _tool_piece(raw: str, tools: list[ToolSpec], in_tags: bool) -> tuple[str, str]:
    try:
        call = parse_call(raw, tools)
    except InvalidToolCall:  # left as the model wrote it
        return ("content", f"{OPEN}{raw}{CLOSE}" if in_tags else raw)
    entry = {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    return ("tool_call", json.dumps(entry))


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
    calls: list[Any] = []
    async with contextlib.aclosing(rest):  # a client that disconnects aborts the request
        piece: Piece | None = first
        while piece is not None:
            if isinstance(piece, LLMDelta):
                yield chunk({}, finish=_finish(piece, calls))
                if include_usage:
                    yield chunk({}, usage=_usage(piece))
                break
            kind, text = piece
            if kind == "tool_call":
                calls.append(text)
                yield chunk({"tool_calls": [{"index": len(calls) - 1, **json.loads(text)}]})
            else:
                yield chunk({"content": text} if kind == "content" else {"reasoning_content": text})
            try:
                piece = await anext(rest)
            except LLMBackendError as exc:
                error = {"message": str(exc), "type": "server_error", "code": exc.code}
                yield f"data: {json.dumps({'error': error})}\n\n"
                piece = None
    yield "data: [DONE]\n\n"
