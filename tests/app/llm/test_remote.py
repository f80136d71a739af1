"""The `remote` backend end to end: a voice session whose LLM is a SECOND real r1voice
server (uvicorn on a loopback port, real HTTP, real streaming). Barge-in closes the
stream and the second server's engine aborts the request; a dead remote gives a clear
`error` event and readiness 503; the remote's 429 is `server_busy`."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.audio import PROTOCOL_RATE
from app.llm import ChatMessage, GenerationParams, LLMBackendError, LLMBusyError, LLMDelta
from app.llm.remote import RemoteBackend
from tests.app.llm.scripted import ScriptedLLM
from tests.conftest import app_with, ask, is_done, receive_until, stream_audio

MODEL = "smollm2-135m-instruct"


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """A real uvicorn server for `app` on a free loopback port: its base URL."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True, name=f"uvicorn-{port}")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def dead_url() -> str:
    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def front(components: Any, url: str, **options: Any) -> TestClient:
    """The voice server under test: the shared speech models, the LLM at `url`."""
    remote = RemoteBackend(MODEL, url, connect_timeout_s=2, read_timeout_s=30, **options)
    return TestClient(app_with(dataclasses.replace(components, llm=remote)))


def samples(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def finished(base: str, reason: str) -> float:
    key = ("vllm:request_success_total", (("finished_reason", reason), ("model_name", MODEL)))
    return samples(base).get(key, 0.0)


def running(base: str) -> float:
    return samples(base)[("vllm:num_requests_running", (("model_name", MODEL),))]


def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def second_server(shared_components: Any) -> Iterator[str]:
    """A second real r1voice server over the real engine (SmolLM2)."""
    with serve(app_with(shared_components)) as base:
        yield base


def test_a_text_turn_is_answered_by_the_second_server(
    shared_components: Any, second_server: str
) -> None:
    before = finished(second_server, "stop")
    client = front(shared_components, f"{second_server}/v1")
    assert client.get("/v2/health/ready").status_code == 200
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "What is the capital of France?", {"modalities": ["text"]})
        events = receive_until(ws, is_done)
    assert events[-1]["response"]["status"] == "completed"
    text = "".join(e["delta"] for e in events if e["type"] == "response.text.delta")
    assert "paris" in text.lower()
    assert finished(second_server, "stop") == before + 1  # it really went over HTTP
    # the front server's own LLM series count the same request, from the typed deltas
    front_metrics = client.get("/metrics").text
    assert 'vllm:request_success_total{finished_reason="stop",model_name=' in front_metrics


def test_barge_in_closes_the_stream_and_the_second_server_aborts(
    shared_components: Any, second_server: str
) -> None:
    aborted = finished(second_server, "abort")
    client = front(shared_components, f"{second_server}/v1")
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "Tell me a long story about a dragon and a knight.", {"max_output_tokens": 400})
        before = receive_until(ws, lambda e: e["type"] == "response.audio.delta")
        while sum(e["type"] == "response.audio.delta" for e in before) < 10:
            before.append(ws.receive_json())
        speech = shared_components.tts.synthesize("Stop, please.", PROTOCOL_RATE)
        silence = np.zeros(PROTOCOL_RATE, dtype=np.float32)
        stream_audio(ws, np.concatenate([silence[:4800], speech, silence]))
        events = receive_until(ws, lambda e: is_done(e) and e["response"]["status"] != "cancelled")
    done = [e for e in before + events if is_done(e)]
    assert done[0]["response"]["status"] == "cancelled"
    assert done[0]["response"]["status_details"]["reason"] == "turn_detected"
    # the second server saw the HTTP request go away and its engine aborted it
    wait_for(lambda: finished(second_server, "abort") >= aborted + 1)
    wait_for(lambda: running(second_server) == 0)
    stats = shared_components.llm.stats()
    assert stats["num_running"] == 0 and stats["kv_blocks_used"] == 0
    assert "r1voice_barge_ins_total 1.0" in client.get("/metrics").text


def test_a_dead_remote_is_a_clear_error_and_not_ready(shared_components: Any) -> None:
    url = dead_url()
    client = front(shared_components, url)
    ready = client.get("/v2/health/ready")
    assert ready.status_code == 503
    assert url in ready.json()["error"] and "unreachable" in ready.json()["error"]
    assert client.get(f"/v2/models/{MODEL}/ready").status_code == 503
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "Hello?", {"modalities": ["text"]})
        events = receive_until(ws, is_done)
    error = next(e for e in events if e["type"] == "error")["error"]
    assert error["code"] == "llm_unavailable"
    assert url in error["message"] and "unreachable" in error["message"]
    assert events[-1]["response"]["status"] == "failed"
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}
    reply = client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 503 and reply.json()["error"]["code"] == "llm_unavailable"


class BusyLLM(ScriptedLLM):
    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        raise LLMBusyError("the engine's waiting queue is full; retry shortly", retry_after_s=3)
        yield LLMDelta("never")  # pragma: no cover


def test_the_remotes_429_is_server_busy(shared_components: Any) -> None:
    busy = app_with(dataclasses.replace(shared_components, llm=BusyLLM([])))
    with serve(busy) as base:
        remote = RemoteBackend(MODEL, f"{base}/v1")

        async def first() -> None:
            stream = remote.stream_chat([ChatMessage("user", "Hi")], GenerationParams(), "r1")
            async with contextlib.aclosing(stream):
                await anext(stream)

        with pytest.raises(LLMBusyError) as refused:
            asyncio.run(first())
        assert refused.value.retry_after_s == 3
        assert "queue is full" in str(refused.value)
        client = front(shared_components, f"{base}/v1")
        with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
            ws.receive_json()
            ask(ws, "Hello?", {"modalities": ["text"]})
            events = receive_until(ws, is_done)
        assert next(e for e in events if e["type"] == "error")["error"]["code"] == "server_busy"


def test_reasoning_usage_and_finish_cross_the_wire(shared_components: Any) -> None:
    """An R1-style second server sends `reasoning_content`; the remote backend re-tags it
    so the front server splits it again; usage and finish reason are the remote's."""
    r1 = ScriptedLLM(
        ["Paris is in ", "France.", "</think>", "Paris."],
        opens_reasoning=True,
        prompt_tokens=12,
        completion_tokens=9,
        finish_reason="length",
    )
    with serve(app_with(dataclasses.replace(shared_components, llm=r1))) as base:
        client = front(shared_components, f"{base}/v1")
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Capital?"}]}
        data = client.post("/v1/chat/completions", json=body).json()
    message = data["choices"][0]["message"]
    assert message["reasoning_content"] == "Paris is in France."
    assert message["content"] == "Paris."
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["prompt_tokens"] == 12 and data["usage"]["completion_tokens"] == 9


def test_an_unserved_model_and_a_missing_url_are_named(second_server: str) -> None:
    remote = RemoteBackend("gpt-17", f"{second_server}/v1")
    problem = asyncio.run(remote.health())
    assert problem is not None and "does not serve 'gpt-17'" in problem and MODEL in problem
    with pytest.raises(LLMBackendError, match="--llm-url"):
        RemoteBackend(MODEL, "")


class SlowLLM(ScriptedLLM):
    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        await asyncio.sleep(2)  # far past the front's read timeout
        yield LLMDelta(finish_reason="stop")


def test_a_silent_remote_hits_the_read_timeout(shared_components: Any) -> None:
    slow = app_with(dataclasses.replace(shared_components, llm=SlowLLM([])))
    with serve(slow) as base:
        remote = RemoteBackend(MODEL, f"{base}/v1", read_timeout_s=0.2)

        async def first() -> None:
            stream = remote.stream_chat([ChatMessage("user", "Hi")], GenerationParams(), "r1")
            async with contextlib.aclosing(stream):
                await anext(stream)

        with pytest.raises(LLMBackendError, match=r"sent nothing for 0\.2 s") as failed:
            asyncio.run(first())
        assert failed.value.code == "llm_unavailable"
