"""A session's traced LLM hands a prime to the backend it wraps: without it the base
class's no-op answered, and no voice turn was ever primed."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace import TracerProvider

from app.llm import ChatMessage, GenerationParams
from app.telemetry.traced_models import TracedLLM
from app.telemetry.traced_session import TracedSession
from tests.fakes import ScriptedLLM


def test_a_traced_llm_primes_the_backend_it_wraps() -> None:
    inner = ScriptedLLM()
    llm = TracedLLM(inner, TracedSession(TracerProvider().get_tracer("test"), content=False))
    messages = [ChatMessage("user", "What is the capital of")]
    asyncio.run(llm.prime(messages, GenerationParams()))
    assert inner.primed == [messages] and inner.prompts == []
