"""The `remote` backend: any OpenAI-compatible server (vLLM, SGLang, TensorRT-LLM's
`trtllm-serve`, llama.cpp's server, another r1voice) streamed over HTTP with httpx.

Closing a stream closes its HTTP response, which closes the connection, and the
remote server aborts the request (vLLM, SGLang, llama.cpp's server and r1voice all do on
disconnect). Refusals keep their meaning: the remote's 429 is `LLMBusyError` (the
session's `server_busy`); a remote that cannot be reached is `LLMBackendError` with code
"llm_unavailable" and a message naming the URL. `health()` asks the remote's `/models`
(cached a second), so readiness reports the remote's state.

llama.cpp's server (llama-cpp-python) shaped three choices here: it refuses an
`X-Request-Id` that is not a UUID (an empty 400), so the header carries a UUID made from
the request id; it streams no `usage`, so the token counts are then counted (one chunk
per token) and estimated (the prompt); and it serves `/models` under the same lock as
generation, cutting the stream in flight (`--interrupt_requests`, on by default) or
waiting for it, so no probe goes out while our own streams show the remote is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx

from app.llm.backend import (
    ChatMessage,
    FinishReason,
    GenerationParams,
    LLMBackend,
    LLMBackendError,
    LLMBusyError,
    LLMDelta,
)
from app.llm.reasoning import CLOSE, OPEN
from app.text_units import is_cjk_letter

log = logging.getLogger("r1voice.llm.remote")

DEFAULT_CONTEXT_LENGTH = 4096  # when neither the settings nor the remote say
UNAVAILABLE = "llm_unavailable"
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "abort": "abort",
    "tool_calls": "stop",
    "function_call": "stop",
    "content_filter": "stop",
}


class RemoteBackend(LLMBackend):
    name = "remote"

    def __init__(
        self,
        model: str,
        url: str,
        api_key: str | None = None,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 60.0,
        context_length: int | None = None,
        send_priority: bool = False,
        opens_reasoning: bool = False,
    ) -> None:
        if not url:
            raise LLMBackendError("the remote backend needs --llm-url (e.g. http://host:8000/v1)")
        self.model = model
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self.probe_timeout = httpx.Timeout(connect_timeout_s)
        self.context_length = context_length or DEFAULT_CONTEXT_LENGTH
        self._context_known = bool(context_length)
        self.send_priority = send_priority  # vLLM refuses `priority` unless it schedules by it
        # A remote with a reasoning parser (vLLM --reasoning-parser deepseek_r1) sends
        # `reasoning_content`, re-tagged below; without one an R1 template opens <think>
        # in the prompt and the content starts inside it: say so with opens_reasoning.
        self._opens_reasoning = opens_reasoning
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        self._health: tuple[float, str | None] = (-math.inf, None)
        self._counters = {
            "num_running": 0,
            "remote_requests": 0,
            "remote_errors": 0,
            "usage_estimated": 0,  # answers whose remote sent no `usage`
        }

    # ---- the interface ------------------------------------------------------------

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        body = self._body(params)
        body["messages"] = [{"role": m.role, "content": m.content} for m in messages]
        # a chat template adds a few tokens around each message and before the answer
        estimate = sum(_estimate(m.content) + 4 for m in messages) + 3
        async with contextlib.aclosing(
            self._stream("/chat/completions", body, request_id, estimate)
        ) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        body = self._body(params)
        body["prompt"] = prompt
        async with contextlib.aclosing(
            self._stream("/completions", body, request_id, _estimate(prompt))
        ) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def count_tokens(self, texts: list[str]) -> list[int]:
        # No portable tokenize endpoint: a safe over-estimate (English runs ~4 chars per
        # token), so history trimming never overfills the remote's context.
        return [_estimate(text) for text in texts]

    def warmup(self) -> None:
        """Learn the context length from the remote's model card when it is up; a remote
        still starting is not an error here (readiness reports it until it is up)."""
        try:
            with httpx.Client(timeout=self.probe_timeout, headers=self.headers) as client:
                self._learn(client.get(f"{self.url}/models"))
        except (httpx.HTTPError, LLMBackendError) as exc:
            log.warning("remote LLM at %s not ready yet: %s", self.url, exc)

    async def health(self) -> str | None:
        checked_at, problem = self._health
        if time.monotonic() - checked_at < 1.0:
            return problem
        if self._counters["num_running"]:
            # Our streams in flight show the remote is up and serves the model; and
            # llama.cpp's server answers /models only between answers (one lock): the
            # probe would wait for the answer or, with its interrupt_requests, cut it.
            self._health = (time.monotonic(), None)
            return None
        try:
            self._learn(await self._client().get(f"{self.url}/models", timeout=self.probe_timeout))
            problem = None
        except httpx.HTTPError as exc:
            problem = self._unreachable(exc)
        except LLMBackendError as exc:
            problem = str(exc)
        self._health = (time.monotonic(), problem)
        return problem

    def stats(self) -> dict[str, Any]:
        return dict(self._counters)

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(RuntimeError):  # one of another (closed) event loop
                await client.aclose()

    # ---- HTTP ---------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        """One connection pool per event loop (test apps each run their own loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [k for k in self._clients if k.is_closed()]:
                del self._clients[old]
            client = httpx.AsyncClient(timeout=self.timeout, headers=self.headers)
            self._clients[loop] = client
        return client

    def _body(self, params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
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
        if self.send_priority and params.priority is not None:
            body["priority"] = params.priority
        if params.max_reasoning_tokens is not None:  # an extra field: servers ignore unknown ones
            body["max_reasoning_tokens"] = params.max_reasoning_tokens
        return body

    async def _stream(
        self, path: str, body: dict[str, Any], request_id: str, prompt_estimate: int = 0
    ) -> AsyncGenerator[LLMDelta, None]:
        self._counters["remote_requests"] += 1
        headers = {"X-Request-Id": remote_request_id(request_id)} if request_id else {}
        try:
            # Leaving this block early (the caller closed us) closes the response and its
            # connection: the remote sees the disconnect and aborts the request.
            async with self._client().stream(
                "POST", f"{self.url}{path}", json=body, headers=headers
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise self._refusal(response)
                self._counters["num_running"] += 1
                try:
                    async for delta in self._deltas(response.aiter_lines(), prompt_estimate):
                        yield delta
                finally:
                    self._counters["num_running"] -= 1
        except httpx.ReadTimeout as exc:
            self._counters["remote_errors"] += 1
            raise LLMBackendError(
                f"the remote LLM at {self.url} sent nothing for {self.timeout.read} s", UNAVAILABLE
            ) from exc
        except httpx.HTTPError as exc:
            self._counters["remote_errors"] += 1
            raise LLMBackendError(self._unreachable(exc), UNAVAILABLE) from exc

    async def _deltas(
        self, lines: AsyncIterator[str], prompt_estimate: int = 0
    ) -> AsyncGenerator[LLMDelta, None]:
        """SSE lines -> text deltas, then one final delta (finish reason and usage).

        Without `usage` from the remote (llama.cpp's server ignores
        `stream_options.include_usage`) the chunks that carried text are counted as the
        completion tokens (such servers send one per token) and `prompt_estimate` is
        the prompt's. A stream that ends with `[DONE]` but no finish reason was stopped
        by the remote (llama.cpp's server does so when another request arrives): "abort".
        """
        finish: FinishReason | None = None
        usage: dict[str, Any] = {}
        pieces = 0  # chunks that carried text
        done = False
        in_reasoning = self._opens_reasoning  # where the caller's ThinkSplitter stands
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
            raise LLMBackendError(f"the remote LLM at {self.url} ended the stream unfinished")
        if finish is None:
            log.warning(
                "the remote LLM at %s stopped an answer unfinished (llama.cpp's server does "
                "when another request arrives: start it with --interrupt_requests False)",
                self.url,
            )
            finish = "abort"
        if not usage:
            self._counters["usage_estimated"] += 1
            usage = {"prompt_tokens": prompt_estimate, "completion_tokens": pieces}
        details = usage.get("prompt_tokens_details") or {}
        yield LLMDelta(
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=details.get("cached_tokens"),
        )

    def _refusal(self, response: httpx.Response) -> LLMBackendError:
        self._counters["remote_errors"] += 1
        try:
            error = response.json().get("error", {})
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            code = error.get("code") if isinstance(error, dict) else None
        except (ValueError, AttributeError):
            message, code = response.text[:300], None
        message = message or f"{response.reason_phrase} (no body)"
        where = f"the remote LLM at {self.url} answered {response.status_code}: {message}"
        if response.status_code == 429:
            return LLMBusyError(where, _retry_after(response.headers.get("retry-after")))
        if code == "context_length_exceeded" or "context length" in str(message).lower():
            return LLMBackendError(where, "context_length_exceeded")
        return LLMBackendError(where, UNAVAILABLE if response.status_code >= 500 else None)

    def _learn(self, response: httpx.Response) -> None:
        """Check the remote serves our model; take its context length when it says."""
        if response.status_code != 200:
            raise LLMBackendError(
                f"the remote LLM at {self.url} answered {response.status_code} on /models"
            )
        cards = response.json().get("data") or []
        card = next((c for c in cards if c.get("id") == self.model), None)
        if card is None:
            served = [c.get("id") for c in cards]
            raise LLMBackendError(
                f"the remote LLM at {self.url} does not serve '{self.model}' (it serves {served})"
            )
        if not self._context_known and isinstance(card.get("max_model_len"), int):
            self.context_length = card["max_model_len"]
            self._context_known = True

    def _unreachable(self, exc: Exception) -> str:
        reason = str(exc) or type(exc).__name__
        return f"the remote LLM at {self.url} is unreachable ({reason}); is it running?"


def remote_request_id(request_id: str) -> str:
    """The `X-Request-Id` sent for `request_id`: a UUID, the shape proxies generate and
    llama.cpp's server demands (it refuses any other value with an empty 400); the same
    for the same id, so the remote's logs can be matched: uuid5(NAMESPACE_URL, id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, request_id))


def _estimate(text: str) -> int:
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
