"""Prometheus metrics: per-turn latency breakdown, responses, sessions, and the LLM's counters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from app.realtime.responses.spec import ResponseOutcome

LATENCY_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
TURN_STAGES = ("transcript", "first_token", "first_audio")


class _LLMStatsCollector(Collector):
    """Publishes whatever numeric counters the LLM backend's stats() returns."""

    def __init__(self, stats: Callable[[], dict[str, Any]]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for key, value in sorted(self.stats().items()):
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            yield GaugeMetricFamily(f"r1voice_llm_{key}", f"LLM backend stat '{key}'", value=value)


class Metrics:
    """One registry per app, so several apps (tests) never share counters."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.turn_latency = Histogram(
            "r1voice_turn_latency_seconds",
            "Time from end of speech to each stage of the answer",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.responses = Counter(
            "r1voice_responses", "Responses by final status", ["status"], registry=self.registry
        )
        self.sessions = Gauge(
            "r1voice_active_sessions", "Open Realtime sessions", registry=self.registry
        )
        self.ready = Gauge(
            "r1voice_ready", "1 once models are loaded and warmed up", registry=self.registry
        )
        self._llm: _LLMStatsCollector | None = None

    def watch_llm(self, stats: Callable[[], dict[str, Any]]) -> None:
        if self._llm is None:
            self._llm = _LLMStatsCollector(stats)
            self.registry.register(self._llm)

    def record_response(self, outcome: ResponseOutcome) -> None:
        """A response ended: count it by status and observe a voice turn's stages."""
        if not outcome.visible:
            return  # an early answer the client never saw
        self.responses.labels(status=outcome.status).inc()
        for stage, seconds in (outcome.stage_seconds or {}).items():
            if seconds is not None:  # negative when the answer started early (speculation)
                self.turn_latency.labels(stage=stage).observe(max(seconds, 0.0))

    def render(self) -> bytes:
        return generate_latest(self.registry)
