"""Prometheus metrics: per-turn latency breakdown, voice series, responses, sessions, and
the LLM series under vLLM's names and ours (app/server/llm_metrics.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from app.components import Components
from app.llm import LLMBackend
from app.realtime.responses.spec import ResponseOutcome
from app.server.llm_metrics import LLMMetrics, StatsCollector
from app.server.metered_llm import MeteredLLM

LATENCY_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
TURN_STAGES = ("transcript", "first_token", "first_audio")


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
        self.sessions_opened = Counter(
            "r1voice_sessions",
            "Sessions opened, by transport (realtime, webrtc, twilio, xiaozhi)",
            ["transport"],
            registry=self.registry,
        )
        self.transport_errors = Counter(
            "r1voice_transport_errors",
            "Malformed messages a transport refused (the session closed or told), by code",
            ["transport", "code"],
            registry=self.registry,
        )
        self.ready = Gauge(
            "r1voice_ready", "1 once models are loaded and warmed up", registry=self.registry
        )
        self.voice_to_voice = Histogram(
            "r1voice_voice_to_voice_seconds",
            "End of the user's speech to the first audio of the answer",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.asr = Histogram(
            "r1voice_asr_seconds",
            "End of speech to the final transcript",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.first_audio = Histogram(
            "r1voice_tts_first_audio_seconds",
            "First LLM token to the first audio of the answer",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.barge_ins = Counter(
            "r1voice_barge_ins", "Answers interrupted by the user speaking", registry=self.registry
        )
        self.turn_merges = Counter(
            "r1voice_turn_merges",
            "Turns continued by speech soon after them (the earlier turn and its unseen answer "
            "deleted), by turn detection",
            ["turn_detection"],
            registry=self.registry,
        )
        self.llm = LLMMetrics(self.registry)
        self._llm: StatsCollector | None = None
        self._metered: dict[int, tuple[Any, Components]] = {}
        self._metered_llms: dict[int, tuple[LLMBackend, LLMBackend]] = {}

    def watch_llm(self, stats: Callable[[], dict[str, Any]]) -> None:
        if self._llm is None:
            self._llm = StatsCollector(stats, lambda: self.llm.model_name)
            self.registry.register(self._llm)

    def metered(self, components: Components) -> Components:
        """The components with their LLM seen through this app's LLM metrics (one
        wrapper per components object)."""
        self.llm.model_name = components.settings.llm_model
        key = id(components)
        cached = self._metered.get(key)
        if cached is None or cached[0] is not components:
            llm = MeteredLLM(components.llm, self.llm)
            self._metered_llms[id(components.llm)] = (components.llm, llm)
            cached = (components, dataclasses.replace(components, llm=llm))
            self._metered[key] = cached
        return cached[1]

    def metered_llm(self, llm: LLMBackend) -> LLMBackend:
        """`llm` seen through this app's LLM metrics, labelled with its own model (one
        wrapper per backend; the server's is the one `metered` made)."""
        cached = self._metered_llms.get(id(llm))
        if cached is None or cached[0] is not llm:
            cached = (llm, MeteredLLM(llm, self.llm, model_name=llm.model))
            self._metered_llms[id(llm)] = cached
        return cached[1]

    def record_session(self, transport: str) -> None:
        """A session opened over `transport` ("realtime", "webrtc", "twilio", "xiaozhi")."""
        self.sessions_opened.labels(transport=transport).inc()

    def record_transport_error(self, transport: str, code: str) -> None:
        """`transport` refused a malformed message with the error `code`."""
        self.transport_errors.labels(transport=transport, code=code).inc()

    def record_merge(self, turn_detection: str) -> None:
        """A turn was continued (merged with the next speech): semantic_vad should rarely."""
        self.turn_merges.labels(turn_detection=turn_detection).inc()

    def record_response(self, outcome: ResponseOutcome) -> None:
        """A response ended: count it by status and observe a voice turn's stages."""
        if not outcome.visible:
            return  # an early answer the client never saw
        self.responses.labels(status=outcome.status).inc()
        if outcome.status == "cancelled" and outcome.reason == "turn_detected":
            self.barge_ins.inc()
        stages = outcome.stage_seconds or {}
        for stage, seconds in stages.items():
            if seconds is not None:  # negative when the answer started early (speculation)
                self.turn_latency.labels(stage=stage).observe(max(seconds, 0.0))
        voice = [
            (self.asr, stages.get("transcript")),
            (self.voice_to_voice, stages.get("first_audio")),
        ]
        token, audio = stages.get("first_token"), stages.get("first_audio")
        if token is not None and audio is not None:
            voice.append((self.first_audio, audio - max(token, 0.0)))
        for histogram, value in voice:
            if value is not None:
                histogram.observe(max(value, 0.0))

    def render(self) -> bytes:
        return generate_latest(self.registry)
