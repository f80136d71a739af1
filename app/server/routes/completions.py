"""POST /v1/completions: a raw prompt (no chat template), plain or streamed (SSE with
`data: [DONE]`), as OpenAI's legacy API and vLLM serve it.

`n` must be 1; `usage` and `finish_reason` come from the backend's final delta (the
engine's counts, not re-tokenized); `priority` is vLLM's extension (lower runs first).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import Field

from app.llm import GenerationParams, LLMBackendError, LLMDelta
from app.server.routes.openai_common import (
    OpenAIError,
    ReadyComponents,
    check_http_priority,
    check_model,
    refusal,
)
from app.server.routes.openai_schemas import SamplingRequest
from app.server.state import HttpState

router = APIRouter(prefix="/v1", tags=["openai"])


class CompletionRequest(SamplingRequest):
    prompt: str | list[str]
    max_tokens: int | None = Field(default=16, ge=1)  # OpenAI's default for this API
    echo: bool = False
    logprobs: int | None = None
    suffix: str | None = None

    def text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        if len(self.prompt) != 1:
            raise OpenAIError(
                400,
                "give one prompt (a batch is not supported)",
                code="invalid_value",
                param="prompt",
            )
        return self.prompt[0]

    def params(self) -> GenerationParams:
        for field, unsupported in (
            ("n", self.n != 1),
            ("logprobs", self.logprobs is not None),
            ("suffix", self.suffix is not None),
        ):
            if unsupported:
                message = "only n=1 is supported" if field == "n" else f"{field} is not supported"
                raise OpenAIError(400, message, code="invalid_value", param=field)
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        return GenerationParams(
            max_tokens=self.max_tokens or 16,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            seed=self.seed,
            priority=self.priority,
            stop=stop,
        )


def usage(final: LLMDelta) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt_tokens": final.prompt_tokens,
        "completion_tokens": final.completion_tokens,
        "total_tokens": final.prompt_tokens + final.completion_tokens,
    }
    if final.cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": final.cached_tokens}
    return body


async def first_delta(stream: AsyncGenerator[LLMDelta, None], param: str) -> LLMDelta:
    """The stream's first delta; a refusal before it (busy, too long, remote down) is an
    HTTP error, not a broken stream."""
    try:
        return await anext(stream)
    except StopAsyncIteration as exc:
        raise OpenAIError(500, "the backend sent nothing", code="llm_error") from exc
    except LLMBackendError as exc:
        await stream.aclose()
        raise refusal(exc, param) from exc


@router.post("/completions", response_model=None)
async def completions(
    request: CompletionRequest, components: ReadyComponents, state: HttpState
) -> JSONResponse | StreamingResponse:
    check_model(request.model, components)
    check_http_priority(request.priority, state.settings.http_priority_floor)
    params, prompt = request.params(), request.text()
    completion_id = f"cmpl-{uuid.uuid4().hex}"
    stream = components.llm.stream_text(prompt, params, completion_id)
    first = await first_delta(stream, "prompt")
    created = int(time.time())
    head = {"id": completion_id, "object": "text_completion", "created": created}
    head["model"] = request.model
    echo = prompt if request.echo else ""
    if request.stream:
        include_usage = bool(request.stream_options and request.stream_options.include_usage)
        return StreamingResponse(
            _sse(first, stream, head, echo, include_usage), media_type="text/event-stream"
        )
    text, delta = echo, first
    async with contextlib.aclosing(stream):
        try:
            while not delta.finished:
                text += delta.text
                delta = await anext(stream)
        except (LLMBackendError, StopAsyncIteration) as exc:
            raise OpenAIError(
                500, f"the backend failed mid-answer: {exc}", code="llm_error"
            ) from exc
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": delta.finish_reason}
    return JSONResponse({**head, "choices": [choice], "usage": usage(delta)})


async def _sse(
    first: LLMDelta,
    rest: AsyncGenerator[LLMDelta, None],
    head: dict[str, Any],
    echo: str,
    include_usage: bool,
) -> AsyncIterator[str]:
    def chunk(text: str, finish: str | None = None) -> str:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        body = {**head, "choices": [choice]}
        if include_usage:
            body["usage"] = None
        return f"data: {json.dumps(body)}\n\n"

    if echo:
        yield chunk(echo)
    delta: LLMDelta | None = first
    async with contextlib.aclosing(rest):  # a client that disconnects aborts the request
        while delta is not None and not delta.finished:
            yield chunk(delta.text)
            try:
                delta = await anext(rest)
            except (LLMBackendError, StopAsyncIteration) as exc:
                error = {"message": f"the backend failed mid-answer: {exc}", "code": "llm_error"}
                yield f"data: {json.dumps({'error': {'type': 'server_error', **error}})}\n\n"
                delta = None
    if delta is not None:
        yield chunk("", delta.finish_reason)
        if include_usage:
            yield f"data: {json.dumps({**head, 'choices': [], 'usage': usage(delta)})}\n\n"
    yield "data: [DONE]\n\n"
