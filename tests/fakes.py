"""Scripted stand-ins for one part at a time (Pipecat's run_test style): feed a part
inputs, assert its exact outputs. Real models are used everywhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import numpy as np

from app.llm import ChatMessage, FinishReason, GenerationParams, LLMBackend, LLMDelta
from app.speech.asr import Transcript


class ScriptedLLM(LLMBackend):
    """Replays fixed deltas (an R1 model's `<think>` text, say); records every prompt.

    `deltas` is one script for every request, or a list of scripts used in turn (the
    last one repeats).

    `hold` (an asyncio.Event) makes each stream wait before its first delta, so a test
    can act while a response is in flight; `fail` raises it instead of answering.
    Tokens are counted as whitespace-separated words, the prompt's too (its final delta's
    `prompt_tokens`); each delta is one completion token; `cached_tokens` is reported as given.
    """

    name = "scripted"
    model = "scripted-llm"
    primes = True  # records each prime (the base class's backends do nothing)

    def __init__(
        self,
        deltas: list[str] | list[list[str]] | None = None,
        opens_reasoning: bool = False,
        context_length: int = 4096,
        hold: asyncio.Event | None = None,
        fail: BaseException | None = None,
        cached_tokens: int | None = None,
    ) -> None:
        given = deltas if deltas is not None else ["Hello ", "there."]
        self.scripts: list[list[str]] = (
            [list(d) for d in given] if given and isinstance(given[0], list) else [list(given)]  # type: ignore[arg-type]
        )
        self._opens_reasoning = opens_reasoning
        self.context_length = context_length
        self.hold = hold
        self.fail = fail
        self.cached_tokens = cached_tokens
        self.prompts: list[list[ChatMessage]] = []
        self.params: list[GenerationParams] = []  # each request's, in order
        self.running: set[str] = set()  # requests whose stream is open
        self.opened = asyncio.Event()  # set once a stream has opened
        self.primed: list[list[ChatMessage]] = []  # each prime's prompt, in order
        self.prime_hold: asyncio.Event | None = None  # set: primes wait for it
        self.primes_cancelled = 0

    async def prime(self, messages: list[ChatMessage], params: GenerationParams) -> None:
        self.primed.append(messages)
        try:
            if self.prime_hold is not None:
                await self.prime_hold.wait()
        except asyncio.CancelledError:
            self.primes_cancelled += 1
            raise

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        self.prompts.append(messages)
        self.params.append(params)
        self.running.add(request_id)
        self.opened.set()
        try:
            if self.hold is not None:
                await self.hold.wait()
            if self.fail is not None:
                raise self.fail
            script = self.scripts[min(len(self.prompts) - 1, len(self.scripts) - 1)]
            generated = script[: params.max_tokens]
            for text in generated:
                yield LLMDelta(text=text)
            finish: FinishReason = "length" if len(script) > params.max_tokens else "stop"
            yield LLMDelta(
                finish_reason=finish,
                prompt_tokens=sum(await self.count_tokens([m.content for m in messages])),
                completion_tokens=len(generated),
                cached_tokens=self.cached_tokens,
            )
        finally:
            self.running.discard(request_id)

    async def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(text.split()) for text in texts]

    def warmup(self) -> None:
        return None


class ScriptedASR:
    """Returns the scripted transcripts in order (the last one repeats); records calls."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.calls: list[tuple[int, str | None]] = []  # (samples, prefix)
        self.prompts: list[str | None] = []  # each pass's
        self.contexts: list[str | None] = []  # each final pass's words before it
        self.busy = False
        self.fixed_language: str | None = None

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript:
        self.calls.append((audio_16k.size, prefix))
        self.prompts.append(prompt)
        self.contexts.append(context)
        await asyncio.sleep(0)
        text = self.texts[min(len(self.calls) - 1, len(self.texts) - 1)]
        return Transcript(text=text, language="en", duration_s=audio_16k.size / 16_000)

    async def partial(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        return await self.run(audio_16k, prefix)


class HeldASR(ScriptedASR):
    """Transcripts come only once `ready` is set (a slow ASR)."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(texts)
        self.ready = asyncio.Event()

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript:
        await self.ready.wait()
        return await super().run(audio_16k, prefix, prompt, context)


class ScriptedVoices:
    """A TTS catalog whose every clause is `seconds_per_clause` of a quiet tone."""

    def __init__(self, seconds_per_clause: float = 0.2) -> None:
        self.seconds = seconds_per_clause
        self.spoken: list[str] = []
        self.firsts: list[bool] = []  # each clause: said to be its answer's first

    def voices(self) -> list[str]:
        return ["scripted"]

    def choose(self, voice: str, language: str) -> str:
        return voice

    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> Any:
        self.spoken.append(text)
        self.firsts.append(first)
        await asyncio.sleep(0)
        return np.full(int(self.seconds * out_rate), 0.1, dtype=np.float32)


def spy_transcriptions(monkeypatch: Any) -> list[str]:
    """Record the model name of every real Whisper pass (partial or final), in order: what
    the server used, whatever the client was told."""
    from app.speech.asr import WhisperASR

    used: list[str] = []
    real = WhisperASR.transcribe

    def transcribe(self: WhisperASR, *args: Any, **kwargs: Any) -> Any:
        used.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(WhisperASR, "transcribe", transcribe)
    return used
