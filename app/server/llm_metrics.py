"""The LLM series operators chart, under vLLM's names (`vllm:...`, so existing Grafana
dashboards work unmodified) and the same series as `r1voice_...` (`vllm:X` is also
`r1voice_X`).

Latencies and token counts are measured where requests enter (HTTP routes and Realtime
sessions), from the typed deltas, by wrapping the backend in `MeteredLLM`
(metered_llm.py): so they are the same for every backend, the remote one included. A
request's phases inside the engine (queue, prefill, decode) are the backend's own word,
on its last delta: only the embedded engine gives it. Load (running / waiting requests,
KV cache, prefix cache, preemptions) is read from the backend's `stats()` at scrape time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from app.llm import LLMBackendError, LLMDelta

PREFIXES = ("vllm:", "r1voice_")
# vLLM's buckets, so dashboards' quantiles read the same.
TTFT_BUCKETS: tuple[float, ...] = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
)
TTFT_BUCKETS += (7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS: tuple[float, ...] = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
)
ITL_BUCKETS += (7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_BUCKETS: tuple[float, ...] = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
)
REQUEST_BUCKETS += (60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)


class _Pair:
    """One series published under both prefixes."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        self.series = [make(prefix) for prefix in PREFIXES]

    def inc(self, amount: float = 1.0, /, **labels: str) -> None:
        if amount > 0:
            for s in self.series:
                s.labels(**labels).inc(amount)

    def observe(self, value: float, **labels: str) -> None:
        for s in self.series:
            s.labels(**labels).observe(max(value, 0.0))


class LLMMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.model_name = ""

        def hist(name: str, doc: str, buckets: tuple[float, ...]) -> _Pair:
            return _Pair(
                lambda p: Histogram(
                    p + name, doc, ["model_name"], buckets=buckets, registry=registry
                )
            )

        def counter(name: str, doc: str, *labels: str) -> _Pair:
            return _Pair(
                lambda p: Counter(p + name, doc, ["model_name", *labels], registry=registry)
            )

        self.ttft = hist("time_to_first_token_seconds", "Time to first token", TTFT_BUCKETS)
        self.itl = hist(
            "inter_token_latency_seconds", "Time between streamed text deltas", ITL_BUCKETS
        )
        self.tpot = hist(
            "time_per_output_token_seconds",
            "Per request: (end - first token) / (generated tokens - 1)",
            ITL_BUCKETS,
        )
        self.e2e = hist("e2e_request_latency_seconds", "Request start to end", REQUEST_BUCKETS)
        self.queue = hist(
            "request_queue_time_seconds",
            "Arrival to the first engine step (backends that report it: the embedded engine)",
            REQUEST_BUCKETS,
        )
        self.prefill = hist(
            "request_prefill_time_seconds", "First engine step to first token", REQUEST_BUCKETS
        )
        self.decode = hist(
            "request_decode_time_seconds", "First token to last token", REQUEST_BUCKETS
        )
        self.inference = hist(
            "request_inference_time_seconds", "First engine step to last token", REQUEST_BUCKETS
        )
        self.prompt_hist = hist("request_prompt_tokens", "Prompt tokens per request", TOKEN_BUCKETS)
        self.gen_hist = hist(
            "request_generation_tokens", "Generated tokens per request", TOKEN_BUCKETS
        )
        self.prompt_tokens = counter("prompt_tokens", "Prompt tokens of finished requests")
        self.generation_tokens = counter("generation_tokens", "Generated tokens")
        self.success = counter(
            "request_success", "Finished requests by finish reason", "finished_reason"
        )
        self.failures = counter("request_failures", "Requests refused or failed by code", "code")

    def record_final(
        self,
        final: LLMDelta,
        start: float,
        first: float | None,
        now: float,
        model_name: str | None = None,
    ) -> None:
        model = {"model_name": model_name or self.model_name}
        self.e2e.observe(now - start, **model)
        self.prompt_tokens.inc(final.prompt_tokens, **model)
        self.generation_tokens.inc(final.completion_tokens, **model)
        self.prompt_hist.observe(final.prompt_tokens, **model)
        self.gen_hist.observe(final.completion_tokens, **model)
        if first is not None and final.completion_tokens > 1:
            self.tpot.observe((now - first) / (final.completion_tokens - 1), **model)
        if (times := final.times) is not None:
            self.queue.observe(times.queue_s, **model)
            self.prefill.observe(times.prefill_s, **model)
            self.decode.observe(times.decode_s, **model)
            self.inference.observe(times.inference_s, **model)
        self.success.inc(finished_reason=final.finish_reason or "stop", **model)

    async def meter(
        self, stream: AsyncGenerator[LLMDelta, None], model_name: str | None = None
    ) -> AsyncGenerator[LLMDelta, None]:
        """Pass `stream` through, observing its latencies and its end (labelled
        `model_name`; None: the server's model)."""
        model = {"model_name": model_name or self.model_name}
        start = time.monotonic()
        first = last = None
        ended = False
        try:
            async with contextlib.aclosing(stream):
                async for delta in stream:
                    now = time.monotonic()
                    if delta.text:
                        if first is None:
                            first = now
                            self.ttft.observe(now - start, **model)
                        elif last is not None:
                            self.itl.observe(now - last, **model)
                        last = now
                    if delta.finished:
                        ended = True
                        self.record_final(delta, start, first, now, model["model_name"])
                    yield delta
        except LLMBackendError as exc:
            ended = True
            self.failures.inc(code=exc.code, **model)
            raise
        finally:
            if not ended:  # closed early: the caller went away or barged in
                self.success.inc(finished_reason="abort", **model)


class StatsCollector(Collector):
    """The backend's load at scrape time, as vLLM names it; and every numeric stat as
    `r1voice_llm_<key>` (gauges)."""

    GAUGES: ClassVar[dict[str, str]] = {
        "num_requests_running": "num_running",
        "num_requests_waiting": "num_waiting",
    }
    COUNTERS: ClassVar[dict[str, str]] = {
        "prefix_cache_queries": "prefix_cache_queries",
        "prefix_cache_hits": "prefix_cache_hits",
        "num_preemptions": "num_preemptions",
        "spec_decode_num_drafts": "spec_decode_num_drafts",
        "spec_decode_num_draft_tokens": "spec_decode_num_draft_tokens",
        "spec_decode_num_accepted_tokens": "spec_decode_num_accepted_tokens",
    }

    def __init__(self, stats: Callable[[], dict[str, Any]], model: Callable[[], str]) -> None:
        self.stats = stats
        self.model = model

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        stats = self.stats()
        numbers = {
            k: float(v)
            for k, v in stats.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        for key, value in sorted(numbers.items()):
            yield GaugeMetricFamily(f"r1voice_llm_{key}", f"LLM backend stat '{key}'", value=value)
        model = [self.model()]
        derived: dict[str, float] = {}
        if numbers.get("kv_blocks_total"):
            derived["kv_cache_usage_perc"] = numbers["kv_blocks_used"] / numbers["kv_blocks_total"]
            derived["gpu_cache_usage_perc"] = derived["kv_cache_usage_perc"]  # vLLM v0's name
        for name, key in self.GAUGES.items():
            if key in numbers:
                derived[name] = numbers[key]
        for prefix in PREFIXES:
            for name, value in derived.items():
                family = GaugeMetricFamily(prefix + name, name, labels=["model_name"])
                family.add_metric(model, value)
                yield family
            for name, key in self.COUNTERS.items():
                if key in numbers:
                    counter = CounterMetricFamily(prefix + name, name, labels=["model_name"])
                    counter.add_metric(model, numbers[key])
                    yield counter
