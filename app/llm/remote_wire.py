"""What the `remote` backend (remote.py) sends to and reads from an OpenAI-compatible
server: the request body, the SSE stream as typed deltas, a refusal as our error, and the
model card. No HTTP here: remote.py owns the connections and the counters.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import httpx

from app.llm.backend import (
    FinishReason,
    GenerationParams,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
)
from app.llm.reasoning import CLOSE, OPEN
from app.text_units import is_cjk_letter

log = logging.getLogger("r1voice.llm.remote")

UNAVAILABLE = "llm_unavailable"
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "abort": "abort",
    "tool_calls": "stop",
    "function_call": "stop",
    "content_filter": "stop",
}


def request_body(model: str, params: GenerationParams, send_priority: bool) -> dict[str, Any]:
    """A streamed completion's body, without its `messages` or `prompt`. `send_priority`:
    vLLM refuses `priority` unless it schedules by it."""
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
    }
    if params.stop:
        body["stop"] = list(params.stop)
    if params.seed is not None:
        body["seed"] = params.seed
    if params.top_k:
        body["top_k"] = params.top_k
    if send_priority and params.priority is not None:
        body["priority"] = params.priority
    if params.max_reasoning_tokens is not None:  # an extra field: servers ignore unknown ones
        body["max_reasoning_tokens"] = params.max_reasoning_tokens
    return body


async def read_deltas(
    lines: AsyncIterator[str],
    url: str,
    *,
    opens_reasoning: bool = False,
    prompt_estimate: int = 0,
    on_usage_estimated: Callable[[], None] = lambda: None,
) -> AsyncGenerator[LLMDelta, None]:
    """SSE lines -> text deltas, then one final delta (finish reason and usage).

    Reasoning the remote splits out (`reasoning_content`, or `reasoning` from newer vLLM)
    is re-tagged as the model writes it, for the caller's ThinkSplitter; `opens_reasoning`:
    the prompt opened <think> (an R1 template on a remote without a reasoning parser).
    Without `usage` from the remote (llama.cpp's server ignores
    `stream_options.include_usage`) the chunks that carried text are counted as the
    completion tokens (such servers send one per token), `prompt_estimate` is the
    prompt's, and `on_usage_estimated()` is called. A stream that ends with `[DONE]` but
    no finish reason was stopped by the remote (llama.cpp's server does so when another
    request arrives): "abort".
    """
    finish: FinishReason | None = None
    usage: dict[str, Any] = {}
    pieces = 0  # chunks that carried text
    done = False
    in_reasoning = opens_reasoning  # where the caller's ThinkSplitter stands
    parsed = False  # the remote splits reasoning out (vLLM's --reasoning-parser)
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise LLMBackendError(f"the remote LLM failed: {message}")
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
            text = delta.get("content") or choice.get("text") or ""
            out = ""
            if reasoning:  # re-tag it as the model writes it, for the caller's splitter
                out += reasoning if in_reasoning else OPEN + reasoning
                in_reasoning = parsed = True
            if text:
                out += CLOSE + text if parsed and in_reasoning else text
                in_reasoning = in_reasoning and not parsed
            if reasoning or text:
                pieces += 1
            if out:
                yield LLMDelta(out)
            if choice.get("finish_reason"):
                finish = _FINISH.get(choice["finish_reason"], "stop")
    if finish is None and not done:
        raise LLMBackendError(f"the remote LLM at {url} ended the stream unfinished")
    if finish is None:
        log.warning(
            "the remote LLM at %s stopped an answer unfinished (llama.cpp's server does "
            "when another request arrives: start it with --interrupt_requests False)",
            url,
        )
        finish = "abort"
    if not usage:
        on_usage_estimated()
        usage = {"prompt_tokens": prompt_estimate, "completion_tokens": pieces}
    details = usage.get("prompt_tokens_details") or {}
    yield LLMDelta(
        finish_reason=finish,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=details.get("cached_tokens"),
    )


def refusal(response: httpx.Response, url: str) -> LLMBackendError:
    """A non-200 answer as our error: 429 is busy (with the remote's Retry-After), a
    prompt past the context keeps its code, a 5xx is the remote being unavailable."""
    try:
        error = response.json().get("error", {})
        message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        message, code = response.text[:300], None
    message = message or f"{response.reason_phrase} (no body)"
    where = f"the remote LLM at {url} answered {response.status_code}: {message}"
    if response.status_code == 429:
        return LLMBusyError(where, _retry_after(response.headers.get("retry-after")))
    if code == "context_length_exceeded" or "context length" in str(message).lower():
        return LLMBackendError(where, "context_length_exceeded")
    return LLMBackendError(where, UNAVAILABLE if response.status_code >= 500 else None)


def served_card(response: httpx.Response, url: str, model: str) -> dict[str, Any]:
    """`model`'s card from the remote's `/models` answer; an LLMBackendError when the
    remote answered otherwise or does not serve it."""
    if response.status_code != 200:
        raise LLMBackendError(f"the remote LLM at {url} answered {response.status_code} on /models")
    cards = response.json().get("data") or []
    card = next((c for c in cards if c.get("id") == model), None)
    if card is None:
        served = [c.get("id") for c in cards]
        raise LLMBackendError(
            f"the remote LLM at {url} does not serve '{model}' (it serves {served})"
        )
    return dict(card)


def remote_request_id(request_id: str) -> str:
    """The `X-Request-Id` sent for `request_id`: a UUID, the shape proxies generate and
    llama.cpp's server demands (it refuses any other value with an empty 400); the same
    for the same id, so the remote's logs can be matched: uuid5(NAMESPACE_URL, id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, request_id))


def estimate_tokens(text: str) -> int:
    """Tokens of `text`, over-estimated: English runs ~4 characters per token, a CJK
    character is about one token (Qwen's tokenizer: 1-1.5 characters a token), so each
    counts as one (len / 3 undercounted Chinese 2-3 times)."""
    cjk = sum(is_cjk_letter(char) for char in text)
    return cjk + math.ceil((len(text) - cjk) / 3)


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 1.0
    except ValueError:
        return 1.0
