"""/metrics parsed with prometheus_client's parser: the `vllm:` series (and the same as
`r1voice_`) exist and move after requests; the voice series move after a voice turn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import TurnMetrics
from tests.conftest import app_with, ask, is_done, receive_until, stream_audio

MODEL = "smollm2-135m-instruct"
M = (("model_name", MODEL),)
HISTOGRAMS = (
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",
    "e2e_request_latency_seconds",
    "request_queue_time_seconds",
    "request_prefill_time_seconds",
    "request_decode_time_seconds",
    "request_inference_time_seconds",
    "request_prompt_tokens",
    "request_generation_tokens",
)
GAUGES = (
    "num_requests_running",
    "num_requests_waiting",
    "kv_cache_usage_perc",
    "gpu_cache_usage_perc",
)
SPECULATION = (  # the server speculates by prompt lookup by default
    "spec_decode_num_drafts",
    "spec_decode_num_draft_tokens",
    "spec_decode_num_accepted_tokens",
)
COUNTERS = ("prefix_cache_queries", "prefix_cache_hits", "num_preemptions", *SPECULATION)


def scrape(client: TestClient) -> tuple[dict[str, str], dict[tuple[str, Any], float]]:
    reply = client.get("/metrics")
    assert reply.status_code == 200
    types: dict[str, str] = {}
    values: dict[tuple[str, Any], float] = {}
    for family in text_string_to_metric_families(reply.text):
        types[family.name] = family.type
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return types, values


def test_llm_series_exist_under_both_names_and_move(shared_components: Any) -> None:
    client = TestClient(app_with(shared_components))  # its own registry: exact counts
    types, before = scrape(client)
    for prefix in ("vllm:", "r1voice_"):
        for name in GAUGES:
            assert types[prefix + name] == "gauge", prefix + name
        for name in COUNTERS:
            assert types[prefix + name] == "counter", prefix + name
        for name in HISTOGRAMS:
            assert types[prefix + name] == "histogram", prefix + name
    # a prompt whose last words it holds before: prompt lookup drafts from the first step
    body = {"model": MODEL, "prompt": "one two three four, one two three", "max_tokens": 6}
    usage = client.post("/v1/completions", json={**body, "temperature": 0}).json()["usage"]
    chat = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 4,
        "temperature": 0,
    }
    usage2 = client.post("/v1/chat/completions", json=chat).json()["usage"]
    types, after = scrape(client)
    for prefix in ("vllm:", "r1voice_"):

        def moved(name: str, labels: Any = M, p: str = prefix) -> float:
            return after.get((p + name, labels), 0.0) - before.get((p + name, labels), 0.0)

        length = (("finished_reason", "length"), *M)
        assert moved("request_success_total", length) == 2
        assert moved("prompt_tokens_total") == usage["prompt_tokens"] + usage2["prompt_tokens"]
        generated = usage["completion_tokens"] + usage2["completion_tokens"]
        assert moved("generation_tokens_total") == generated
        for name in ("time_to_first_token_seconds", "e2e_request_latency_seconds"):
            assert moved(name + "_count") == 2
            assert moved(name + "_sum") > 0
        assert moved("time_per_output_token_seconds_count") == 2
        for phase in ("queue", "prefill", "decode", "inference"):  # the engine reports them
            assert moved(f"request_{phase}_time_seconds_count") == 2
        sums = {p: moved(f"request_{p}_time_seconds_sum") for p in ("queue", "prefill", "decode")}
        inference = moved("request_inference_time_seconds_sum")
        assert inference == pytest.approx(sums["prefill"] + sums["decode"])
        assert sums["decode"] > 0  # 6 and 4 tokens
        assert sums["queue"] + inference <= moved("e2e_request_latency_seconds_sum")
        assert moved("inter_token_latency_seconds_count") >= 2
        assert moved("request_generation_tokens_sum") == generated
        assert moved("prefix_cache_queries_total") > 0  # the engine's own counters
        drafts, drafted, accepted = (moved(name + "_total") for name in SPECULATION)
        assert drafts >= 1  # the completion's last words are found in its prompt
        assert drafted >= drafts and 0 <= accepted <= drafted
        assert after[(prefix + "num_requests_running", M)] == 0
        assert 0 <= after[(prefix + "kv_cache_usage_perc", M)] <= 1
    assert after[("r1voice_llm_num_running", ())] == 0  # every engine stat, raw


def test_a_realtime_answer_and_a_voice_turn_are_counted(shared_components: Any) -> None:
    client = TestClient(app_with(shared_components))
    _, before = scrape(client)
    with client.websocket_connect("/v1/realtime?dialect=beta&r1voice_events=1") as ws:
        ws.receive_json()
        ask(ws, "What is the capital of France?", {"modalities": ["text"]})
        receive_until(ws, is_done)
        speech = shared_components.tts.synthesize("What is the capital of France?", PROTOCOL_RATE)
        stream_audio(ws, np.concatenate([speech, np.zeros(PROTOCOL_RATE, np.float32)]))
        receive_until(ws, lambda e: e["type"] == TurnMetrics.TYPE)
    _, after = scrape(client)
    stop = ("vllm:request_success_total", (("finished_reason", "stop"), *M))
    assert after[stop] - before.get(stop, 0.0) == 2
    for name in ("r1voice_voice_to_voice_seconds", "r1voice_asr_seconds"):
        assert after[(name + "_count", ())] - before[(name + "_count", ())] == 1
    first_audio = "r1voice_tts_first_audio_seconds_count"
    assert after[(first_audio, ())] - before[(first_audio, ())] == 1
    assert after[("r1voice_barge_ins_total", ())] == 0
    assert after[("r1voice_active_sessions", ())] == 0
