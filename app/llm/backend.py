"""The LLM backend interface: the only way `app/` reaches a language model.

Implementations: `embedded` (our engine, app/llm/embedded.py), `transformers` (HF
generate, the baseline, app/llm/transformers_backend.py), `remote` (an OpenAI-compatible
server, app/llm/remote.py); `create_backend` in app/llm/__init__.py builds the configured one.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Literal

FinishReason = Literal["stop", "length", "abort"]
# The largest thinking budget a request may set (the engine's own bound; larger is a typo).
MAX_REASONING_TOKENS = 1 << 20


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    priority: int | None = None  # lower runs first; None: the backend's default
    top_k: int = 0
    stop: tuple[str, ...] = ()
    # An R1 model's thinking budget (tokens inside <think>); None: unbounded. The
    # embedded engine closes thinking itself at the budget; the transformers backend
    # ignores it; the remote backend forwards it (a server that does not know it ignores it).
    max_reasoning_tokens: int | None = None
    ignore_eos: bool = False  # the embedded engine's: generate max_tokens whatever EOS


@dataclass(frozen=True)
class LLMTimes:
    """Where a request's time went inside the backend, in seconds (vLLM's phases):
    `queue_s` arrival -> its first step, `prefill_s` -> its first token, `decode_s` -> its
    last token."""

    queue_s: float
    prefill_s: float
    decode_s: float

    @property
    def inference_s(self) -> float:
        """Its first step to its last token."""
        return self.prefill_s + self.decode_s


@dataclass(frozen=True)
class LLMDelta:
    """One piece of a `stream_chat` stream.

    Every delta but the last carries `text` (whole characters, never empty). The last
    one carries no text: it has `finish_reason` set ("stop": end of text or a stop
    string, "length": `max_tokens` reached, "abort": the backend stopped the request)
    and the request's token counts. `completion_tokens` counts every generated token,
    the end-of-text token included; `cached_tokens` is the part of the prompt served
    from a prefix cache, None when the backend does not know. `reasoning_cut` is set on
    every delta once the backend ended the model's thinking at `max_reasoning_tokens`.
    `times` (the last delta): where the request's time went, None when the backend does
    not say.
    """

    text: str = ""
    finish_reason: FinishReason | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    reasoning_cut: bool = False
    times: LLMTimes | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


class LLMBackendError(Exception):
    """A request the backend refuses or fails; the message says what was wrong.

    `code` is machine-readable: "llm_error" unless given, "context_length_exceeded"
    when the prompt and `max_tokens` do not fit the model's context.
    """

    code = "llm_error"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class LLMBusyError(LLMBackendError):
    """The backend is overloaded; retry after `retry_after_s`."""

    code = "server_busy"

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LLMBackend(abc.ABC):
    """Streams chat completions. One instance serves every session concurrently."""

    name: str
    model: str
    context_length: int  # the model's context window in tokens (prompt + generated)
    _opens_reasoning: bool = False  # set at load from the chat template

    @abc.abstractmethod
    def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        """Yield text deltas of the assistant's answer, then one final delta with the
        finish reason and token counts (see `LLMDelta`). Closing the iterator aborts the
        request and frees what it held. Raises `LLMBackendError` (code
        "context_length_exceeded" when the conversation does not fit) or `LLMBusyError`
        before the first delta."""

    def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        """As `stream_chat`, for a raw prompt with no chat template (/v1/completions)."""
        raise LLMBackendError(f"the {self.name} backend serves chat only", code="unsupported")

    async def health(self) -> str | None:
        """What keeps the backend from serving now (a remote that is down), or None."""
        return self.fatal_error()

    def fatal_error(self) -> str | None:
        """A failure this process cannot recover from (our engine's loop died), or None:
        liveness then fails, so an orchestrator restarts the process."""
        return None

    def give_way(self) -> contextlib.AbstractContextManager[None]:
        """A context under which this process's other urgent work (a first clause's
        synthesis, which a listener waits for) has the cores: our engine pauses its steps
        (engine/give_way.py); the others do nothing (a remote one computes elsewhere)."""
        return contextlib.nullcontext()

    @property
    def primes(self) -> bool:
        """Whether `prime` does anything (a prefix cache of ours keeps its work)."""
        return False

    async def prime(self, messages: list[ChatMessage], params: GenerationParams) -> None:  # noqa: B027
        """Compute the KV of `messages`' prompt now and answer nothing, so that a request
        soon after whose prompt begins the same way prefills only the rest (a voice turn's
        answer, primed with the words heard while the user still speaks). Best effort,
        and only where a prefix cache keeps it (our engine); the others do nothing."""

    @abc.abstractmethod
    async def count_tokens(self, texts: list[str]) -> list[int]:
        """Tokens of each text, without special tokens (off the event loop)."""

    @abc.abstractmethod
    def warmup(self) -> None:
        """Run a short generation so the first real request is not slow (blocking)."""

    def prompt_opens_reasoning(self, messages: list[ChatMessage]) -> bool:
        """Whether the chat template already opens a `<think>` block in the prompt
        (R1-Distill). Read from the template once at load, so no tokenizer call here."""
        return bool(self._opens_reasoning)

    def stats(self) -> dict[str, Any]:
        """Counters for /metrics."""
        return {}

    async def close(self) -> None:  # noqa: B027  (optional hook)
        """Release threads and memory."""
