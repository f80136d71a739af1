"""The session's models seen by its trace: each LLM request a `chat {model}` span (GenAI
conventions, with the engine's own queue/prefill/decode as child spans), each
transcription pass an `r1voice.stt` span, each spoken clause an `r1voice.tts` span. All
open under the session's turn (SessionTrace.stage), never the ambient current span."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Any

import numpy as np
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from app.llm import ChatMessage, GenerationParams, LLMBackend, LLMDelta
from app.speech.asr import Transcript
from app.telemetry.session_trace import SessionTrace
from app.telemetry.traced_session import TracedSession

NS = 1_000_000_000


class TracedLLM(LLMBackend):
    """`inner`, each chat request traced; everything else is the wrapped backend's."""

    def __init__(self, inner: LLMBackend, session: TracedSession) -> None:
        self.inner, self.session = inner, session
        self.name = inner.name
        self.model = inner.model

    @property  # type: ignore[override]
    def context_length(self) -> int:
        return self.inner.context_length

    @context_length.setter
    def context_length(self, value: int) -> None:
        self.inner.context_length = value

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.session.request_turn(request_id)
        started = time.time_ns()
        attributes = _request(self, params, request_id)
        span = self.session.stage(f"chat {self.model}", started, attributes, of=request_id)
        first: int | None = None
        final: LLMDelta | None = None
        try:
            async for delta in self.inner.stream_chat(messages, params, request_id):
                if delta.text and first is None:
                    first = time.time_ns()
                if delta.finished:
                    final = delta
                yield delta
        except BaseException as exc:  # GeneratorExit (closed: cancelled) included
            span.set_attribute("r1voice.llm.closed", type(exc).__name__)
            if isinstance(exc, Exception):
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            _finish(self.session.tracer, span, started, first, final)

    @property
    def primes(self) -> bool:
        return self.inner.primes

    async def prime(self, messages: list[ChatMessage], params: GenerationParams) -> None:
        await self.inner.prime(messages, params)

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return await self.inner.count_tokens(texts)

    def warmup(self) -> None:
        self.inner.warmup()

    def prompt_opens_reasoning(self, messages: list[ChatMessage]) -> bool:
        return self.inner.prompt_opens_reasoning(messages)

    async def health(self) -> str | None:
        return await self.inner.health()

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    async def close(self) -> None:
        """Nothing: the wrapped backend belongs to the components, which close it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _request(llm: LLMBackend, params: GenerationParams, request_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": f"r1voice.{llm.name}",
        "gen_ai.request.model": llm.model,
        "gen_ai.request.max_tokens": params.max_tokens,
        "gen_ai.request.temperature": params.temperature,
        "gen_ai.response.id": request_id,
    }


def _finish(
    tracer: Tracer, span: Span, started: int, first: int | None, final: LLMDelta | None
) -> None:
    ended = time.time_ns()
    if first is not None:
        span.set_attribute("gen_ai.response.time_to_first_chunk", (first - started) / NS)
    if final is not None:
        span.set_attribute("gen_ai.usage.input_tokens", final.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", final.completion_tokens)
        if final.cached_tokens is not None:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", final.cached_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", [final.finish_reason or ""])
        times = final.times
        if times is not None:  # the engine's own phases, ending where the request did
            decode_at = ended - int(times.decode_s * NS)
            prefill_at = decode_at - int(times.prefill_s * NS)
            queue_at = prefill_at - int(times.queue_s * NS)
            for name, start, end in (
                ("r1voice.llm.queue", queue_at, prefill_at),
                ("r1voice.llm.prefill", prefill_at, decode_at),
                ("r1voice.llm.decode", decode_at, ended),
            ):
                span.set_attribute(f"{name}_ms", round((end - start) / 1e6, 2))
                _child(tracer, span, name, max(start, started), end)
    span.end(end_time=ended)


def _child(tracer: Tracer, parent: Span, name: str, start: int, end: int) -> None:
    child = tracer.start_span(name, context=trace.set_span_in_context(parent), start_time=start)
    child.end(end_time=end)


class TracedASR:
    """A speech recognizer whose passes are `r1voice.stt` spans."""

    def __init__(self, inner: Any, session: SessionTrace) -> None:
        self.inner, self.session = inner, session

    @property
    def busy(self) -> bool:
        return bool(self.inner.busy)

    @property
    def fixed_language(self) -> str | None:
        return self.inner.fixed_language  # type: ignore[no-any-return]

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript:
        span = self._span("final", audio_16k)
        try:
            result: Transcript = await self.inner.run(
                audio_16k, prefix=prefix, prompt=prompt, context=context
            )
        except BaseException as exc:
            _ended(span, exc)
            raise
        _ended(span, None, result, self.session.content)
        return result

    async def partial(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        span = self._span("partial", audio_16k)
        try:
            result: Transcript = await self.inner.partial(audio_16k, prefix=prefix)
        except BaseException as exc:
            _ended(span, exc)
            raise
        _ended(span, None, result, self.session.content)
        return result

    def _span(self, kind: str, audio: np.ndarray) -> Span | None:
        attributes = {"r1voice.stt.pass": kind, "r1voice.stt.audio_s": round(audio.size / 16000, 3)}
        return self.session.stage("r1voice.stt", time.time_ns(), attributes, of="speech")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _ended(
    span: Span | None,
    exc: BaseException | None,
    result: Transcript | None = None,
    content: bool = False,
) -> None:
    if span is None:
        return
    if exc is not None:
        span.set_attribute("r1voice.stt.closed", type(exc).__name__)
    if result is not None:
        if result.language:
            span.set_attribute("r1voice.stt.language", result.language)
        if content:
            span.set_attribute("r1voice.transcript", result.text)
    span.end()


class TracedVoices:
    """Voices whose every spoken clause is an `r1voice.tts` span."""

    def __init__(self, inner: Any, session: SessionTrace) -> None:
        self.inner, self.session = inner, session

    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> np.ndarray:
        attributes: dict[str, Any] = {"r1voice.tts.voice": voice, "r1voice.tts.chars": len(text)}
        if self.session.content:
            attributes["r1voice.tts.text"] = text
        span = self.session.stage("r1voice.tts", time.time_ns(), attributes)
        try:
            audio: np.ndarray = await self.inner.speak(text, out_rate, speed, voice, slack_s, first)
        except BaseException as exc:
            if span is not None:
                span.set_attribute("r1voice.tts.closed", type(exc).__name__)
                span.end()
            raise
        if span is not None:
            span.set_attribute("r1voice.tts.audio_ms", round(audio.size * 1000 / out_rate, 1))
            span.end()
        return audio

    def choose(self, voice: str, language: str) -> str:
        return self.inner.choose(voice, language)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def traced_llm(session: SessionTrace, llm: LLMBackend) -> LLMBackend:
    """`llm` as the session uses it: traced when its trace is on."""
    return TracedLLM(llm, session) if isinstance(session, TracedSession) else llm


def traced_asr(session: SessionTrace, asr: Any) -> Any:
    return TracedASR(asr, session) if session.enabled else asr


def traced_voices(session: SessionTrace, voices: Any) -> Any:
    return TracedVoices(voices, session) if session.enabled else voices
