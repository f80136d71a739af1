"""The server's metered LLM hands a prime to the backend it wraps (see
tests/app/telemetry/test_traced_models.py), and counts no request for it."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from app.llm import ChatMessage, GenerationParams
from app.server.llm_metrics import LLMMetrics
from app.server.metered_llm import MeteredLLM
from tests.fakes import ScriptedLLM


def test_a_metered_llm_primes_the_backend_it_wraps() -> None:
    inner, registry = ScriptedLLM(), CollectorRegistry()
    llm = MeteredLLM(inner, LLMMetrics(registry))
    messages = [ChatMessage("user", "What is the capital of")]
    asyncio.run(llm.prime(messages, GenerationParams()))
    assert inner.primed == [messages] and inner.prompts == []
    counted = [s for m in registry.collect() for s in m.samples if "request_success" in s.name]
    assert all(s.value == 0 for s in counted)
