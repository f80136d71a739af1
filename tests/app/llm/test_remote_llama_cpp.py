"""The `remote` backend end to end against a server we did not write: llama.cpp's
OpenAI-compatible server (llama-cpp-python's `llama_cpp.server`) serving the bundled
Qwen2.5-Coder-0.5B-Instruct GGUF on a loopback port, started here as a subprocess.

Real models, real HTTP. What llama.cpp's server does differently, and what the backend
does about it (app/llm/remote.py): it refuses a non-UUID `X-Request-Id`; it streams no
`usage`; it serves `/models` under the lock of its one model, and by default
(`--interrupt_requests True`) a request that waits for that lock cuts the answer in
flight, which then ends with `[DONE]` but no finish reason."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE
from app.llm import ChatMessage, GenerationParams, LLMDelta
from app.llm.remote import DEFAULT_CONTEXT_LENGTH, RemoteBackend
from app.settings import DEFAULT_SYSTEM_PROMPT
from app.speech.espeak_tts import EspeakTTS
from tests.conftest import app_with, ask, is_done, receive_until, stream_audio

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip(
        "llama-cpp-python is not installed (`make test` installs llama-cpp-python[server])",
        allow_module_level=True,
    )

MODEL = "qwen2.5-coder-0.5b-instruct"  # the alias llama.cpp serves it as
DISCONNECTED = "Disconnected from client (via refresh/close)"  # llama.cpp, on a cut stream
POSTED = '"POST /v1/chat/completions HTTP/1.1" 200'  # its access log
CAPITAL = "What is the capital of France?"
STORY = "Tell me a long story about a dragon and a knight."


class LlamaServer:
    """`python -m llama_cpp.server` on a free loopback port; its output kept, line by line."""

    def __init__(self, *flags: str) -> None:
        from engine.loading.model_store import bundled_gguf_path

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(bundled_gguf_path(MODEL)),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            "2",
            "--n_ctx",
            str(DEFAULT_CONTEXT_LENGTH),  # what the backend assumes: /models does not say
            "--verbose",
            "False",
            *flags,
        ]
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # its prints reach us at once
        )
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"llama-{port}")
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines[-60:])

    def count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                self._reader.join(timeout=5)
                pytest.fail(
                    f"llama.cpp's server exited ({self.process.returncode}):\n{self.output()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=5).status_code == 200:
                    return
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server did not answer in {timeout} s:\n{self.output()}")
            time.sleep(0.2)

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"{what}; llama.cpp's output:\n{self.output()}"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._reader.join(timeout=5)


@contextlib.contextmanager
def llama_server(*flags: str) -> Iterator[LlamaServer]:
    server = LlamaServer(*flags)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    """The configuration deploy.md recommends: a second request waits, it cuts nothing."""
    with llama_server("--interrupt_requests", "False") as server:
        yield server


@pytest.fixture(scope="module")
def interrupting_llama() -> Iterator[LlamaServer]:
    """llama.cpp's defaults: a request that waits for the model cuts the answer in flight."""
    with llama_server() as server:
        yield server


def front(components: Any, url: str) -> tuple[TestClient, RemoteBackend]:
    """The voice server under test: the shared speech models, llama.cpp as its LLM."""
    remote = RemoteBackend(MODEL, url, connect_timeout_s=2, read_timeout_s=60)
    return TestClient(app_with(dataclasses.replace(components, llm=remote))), remote


def messages(question: str) -> list[ChatMessage]:
    return [ChatMessage("system", DEFAULT_SYSTEM_PROMPT), ChatMessage("user", question)]


def wire(chat: list[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in chat]


def collect(remote: RemoteBackend, chat: list[ChatMessage], max_tokens: int) -> list[LLMDelta]:
    """One streamed answer, every delta."""

    async def run() -> list[LLMDelta]:
        stream = remote.stream_chat(chat, GenerationParams(max_tokens=max_tokens), "resp_1")
        async with contextlib.aclosing(stream):
            return [delta async for delta in stream]

    return asyncio.run(run())


def llama_answer(url: str, chat: list[ChatMessage], max_tokens: int) -> dict[str, Any]:
    """llama.cpp's own account of the same request (not streamed: it has `usage`)."""
    body = {"model": MODEL, "messages": wire(chat), "max_tokens": max_tokens, "temperature": 0}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def test_a_voice_turn_is_answered_by_llama_cpp(shared_components: Any, llama: LlamaServer) -> None:
    posted = llama.count(POSTED)
    client, _ = front(shared_components, llama.url)
    assert client.get("/v2/health/ready").status_code == 200
    # espeak-ng's speech is the same each time (Piper's varies: tiny.en once heard
    # "the capital of friends")
    speech = EspeakTTS("en-us").synthesize(CAPITAL, PROTOCOL_RATE)
    silence = np.zeros(PROTOCOL_RATE, dtype=np.float32)
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        stream_audio(ws, np.concatenate([silence[:4800], speech, silence]))
        events = receive_until(ws, is_done)
    heard = next(
        e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"
    )["transcript"].lower()
    assert "capital" in heard
    assert events[-1]["response"]["status"] == "completed"
    assert any(e["type"] == "response.audio.delta" for e in events)
    answer = "".join(e["delta"] for e in events if e["type"] == "response.audio_transcript.delta")
    assert "paris" in answer.lower() or "france" not in heard  # the answer to what it heard
    llama.wait_for(lambda: llama.count(POSTED) > posted, "llama.cpp was not asked")


def test_usage_and_finish_reason_are_llama_cpps(llama: LlamaServer) -> None:
    """llama.cpp streams no `usage`: the backend counts the streamed tokens (exactly what
    llama.cpp reports for the same request) and over-estimates the prompt, not 0."""
    remote = RemoteBackend(MODEL, llama.url)
    chat = messages(CAPITAL)
    deltas = collect(remote, chat, max_tokens=64)
    truth = llama_answer(llama.url, chat, max_tokens=64)
    final = deltas[-1]
    assert "paris" in "".join(d.text for d in deltas).lower()
    assert final.finish_reason == truth["choices"][0]["finish_reason"] == "stop"
    assert final.completion_tokens == truth["usage"]["completion_tokens"] > 0
    prompt_tokens = truth["usage"]["prompt_tokens"]
    assert prompt_tokens <= final.prompt_tokens <= 2 * prompt_tokens
    cut = collect(remote, chat, max_tokens=3)
    assert cut[-1].finish_reason == "length" and cut[-1].completion_tokens == 3
    assert cut[-1].prompt_tokens == final.prompt_tokens
    assert remote.stats()["usage_estimated"] == 2
    assert remote.stats()["num_running"] == 0


def test_the_front_passes_on_llama_cpps_finish_reason_and_usage(
    shared_components: Any, llama: LlamaServer
) -> None:
    client, _ = front(shared_components, llama.url)
    body = {"model": "r1voice", "messages": wire(messages(CAPITAL)), "max_tokens": 3}
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["choices"][0]["finish_reason"] == "length"
    usage = data["usage"]
    assert usage["completion_tokens"] == 3 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + 3
    metrics = client.get("/metrics").text
    assert "r1voice_llm_usage_estimated 1.0" in metrics


def test_llama_cpps_model_list_is_read(llama: LlamaServer) -> None:
    remote = RemoteBackend(MODEL, llama.url)
    assert asyncio.run(remote.health()) is None
    assert remote.context_length == DEFAULT_CONTEXT_LENGTH  # its card has no max_model_len
    problem = asyncio.run(RemoteBackend("gpt-17", llama.url).health())
    assert problem is not None and "does not serve 'gpt-17'" in problem and MODEL in problem


def test_barge_in_closes_the_stream_and_llama_cpp_aborts(
    shared_components: Any, llama: LlamaServer
) -> None:
    disconnected, posted = llama.count(DISCONNECTED), llama.count(POSTED)
    client, remote = front(shared_components, llama.url)
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, STORY, {"max_output_tokens": 400})
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
    # llama.cpp saw the HTTP stream go away and stopped generating it
    llama.wait_for(lambda: llama.count(DISCONNECTED) > disconnected, "no disconnect seen")
    assert remote.stats()["num_running"] == 0
    # and the next turn was answered by the same llama.cpp server
    assert done[-1]["response"]["status"] == "completed"
    assert done[-1]["response"]["output"][0]["content"][0]["transcript"]
    llama.wait_for(lambda: llama.count(POSTED) >= posted + 2, "llama.cpp was not asked twice")


def test_a_readiness_probe_does_not_cut_llama_cpps_answer(
    interrupting_llama: LlamaServer,
) -> None:
    """Bug: readiness asked /models while an answer streamed; llama.cpp's server (by
    default) cut the answer for it, and the turn failed "ended the stream unfinished"."""
    remote = RemoteBackend(MODEL, interrupting_llama.url)

    async def run() -> list[LLMDelta]:
        stream = remote.stream_chat(messages(STORY), GenerationParams(max_tokens=40), "resp_2")
        async with contextlib.aclosing(stream):
            deltas = [await anext(stream)]
            assert await remote.health() is None  # mid-answer
            return deltas + [delta async for delta in stream]

    deltas = asyncio.run(run())
    assert deltas[-1].finish_reason == "length" and deltas[-1].completion_tokens == 40


def test_a_request_that_cuts_llama_cpps_answer_ends_it_as_abort(
    interrupting_llama: LlamaServer,
) -> None:
    """With --interrupt_requests True (its default) another request cuts the answer in
    flight: `[DONE]` without a finish reason. That is the remote's abort, not an error."""
    server = interrupting_llama
    disconnected = server.count(DISCONNECTED)
    remote = RemoteBackend(MODEL, server.url)

    async def run() -> tuple[list[LLMDelta], httpx.Response]:
        stream = remote.stream_chat(messages(STORY), GenerationParams(max_tokens=400), "resp_3")
        async with contextlib.aclosing(stream), httpx.AsyncClient(timeout=120) as other:
            deltas = [await anext(stream)]
            body = {"model": MODEL, "messages": wire(messages(CAPITAL)), "max_tokens": 16}
            second = asyncio.create_task(other.post(f"{server.url}/chat/completions", json=body))
            deltas += [delta async for delta in stream]
            return deltas, await second

    deltas, second = asyncio.run(run())
    final = deltas[-1]
    assert final.finish_reason == "abort"
    assert 0 < final.completion_tokens < 400 and final.completion_tokens == len(deltas) - 1
    assert second.status_code == 200 and "paris" in second.text.lower()
    # what llama.cpp prints for it too
    server.wait_for(lambda: server.count(DISCONNECTED) > disconnected, "no disconnect seen")


def test_a_stopped_llama_cpp_is_a_clear_error_and_not_ready(shared_components: Any) -> None:
    with llama_server() as server:
        client, _ = front(shared_components, server.url)
        assert client.get("/v2/health/ready").status_code == 200
        server.stop()
        server.wait_for(
            lambda: client.get("/v2/health/ready").status_code == 503, "still ready", 30
        )
    ready = client.get("/v2/health/ready").json()
    assert server.url in ready["error"] and "unreachable" in ready["error"]
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        ws.receive_json()
        ask(ws, "Hello?", {"modalities": ["text"]})
        events = receive_until(ws, is_done)
    error = next(e for e in events if e["type"] == "error")["error"]
    assert error["code"] == "llm_unavailable"
    assert server.url in error["message"] and "unreachable" in error["message"]
    assert events[-1]["response"]["status"] == "failed"
