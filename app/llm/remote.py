"""The `remote` backend: any OpenAI-compatible server (vLLM, SGLang, TensorRT-LLM's
`trtllm-serve`, llama.cpp's server, another r1voice) streamed over HTTP with httpx.

Closing a stream closes its HTTP response, which closes the connection, and the
remote server aborts the request (vLLM, SGLang, llama.cpp's server and r1voice all do on
disconnect). Refusals keep their meaning: the remote's 429 is `LLMBusyError` (the
session's `server_busy`); a remote that cannot be reached is `LLMBackendError` with code
"llm_unavailable" and a message naming the URL. `health()` asks the remote's `/models`
(cached a second), so readiness reports the remote's state. What goes over the wire
(bodies, SSE chunks, refusals, model cards) is remote_wire.py's.

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
import logging
import math
import time
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from app.llm.backend import ChatMessage, GenerationParams, LLMBackend, LLMBackendError, LLMDelta
from app.llm.remote_wire import (
    UNAVAILABLE,
    estimate_tokens,
    read_deltas,
    refusal,
    remote_request_id,
    request_body,
    served_card,
)

log = logging.getLogger("r1voice.llm.remote")

DEFAULT_CONTEXT_LENGTH = 4096  # when neither the settings nor the remote say


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
        body = request_body(self.model, params, self.send_priority)
        body["messages"] = [{"role": m.role, "content": m.content} for m in messages]
        # a chat template adds a few tokens around each message and before the answer
        estimate = sum(estimate_tokens(m.content) + 4 for m in messages) + 3
        async with contextlib.aclosing(
            self._stream("/chat/completions", body, request_id, estimate)
        ) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        body = request_body(self.model, params, self.send_priority)
        body["prompt"] = prompt
        async with contextlib.aclosing(
            self._stream("/completions", body, request_id, estimate_tokens(prompt))
        ) as stream:
            async for delta in stream:  # closing us closes it at once
                yield delta

    async def count_tokens(self, texts: list[str]) -> list[int]:
        # No portable tokenize endpoint: a safe over-estimate (English runs ~4 chars per
        # token), so history trimming never overfills the remote's context.
        return [estimate_tokens(text) for text in texts]

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
                    self._counters["remote_errors"] += 1
                    raise refusal(response, self.url)
                self._counters["num_running"] += 1
                try:
                    async for delta in read_deltas(
                        response.aiter_lines(),
                        self.url,
                        opens_reasoning=self._opens_reasoning,
                        prompt_estimate=prompt_estimate,
                        on_usage_estimated=self._usage_estimated,
                    ):
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

    def _learn(self, response: httpx.Response) -> None:
        """Check the remote serves our model; take its context length when it says."""
        card = served_card(response, self.url, self.model)
        if not self._context_known and isinstance(card.get("max_model_len"), int):
            self.context_length = card["max_model_len"]
            self._context_known = True

    def _usage_estimated(self) -> None:
        self._counters["usage_estimated"] += 1

    def _unreachable(self, exc: Exception) -> str:
        reason = str(exc) or type(exc).__name__
        return f"the remote LLM at {self.url} is unreachable ({reason}); is it running?"
