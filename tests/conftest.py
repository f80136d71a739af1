"""Shared fixtures: real models, a real app with its lifespan, real WebSockets."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE, float_to_pcm16, resample
from app.protocol.server_events import AudioDelta, AudioTranscriptDelta, ResponseDone, TextDelta
from app.server.app import create_app
from app.settings import Settings

SPEECH_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "speech"

# The suite's LLM: the 135M model, whose answers the tests were written against and which
# answers in a fraction of the default 1.5B's time. Servers built by `make_settings` take
# it, and so do the servers tests start as subprocesses (bench runs, `r1voice serve`),
# which read their settings from the environment.
TEST_LLM = "smollm2-135m-instruct"
os.environ["R1VOICE_LLM_MODEL"] = TEST_LLM


def make_settings(**overrides: Any) -> Settings:
    """The server configuration tests run with (backend overridable for comparisons)."""
    backend = os.environ.get("R1VOICE_TEST_LLM_BACKEND", "embedded")
    return Settings(llm_backend=backend, **{"llm_model": TEST_LLM, **overrides})


def serve(settings: Settings) -> Iterator[TestClient]:
    """A client of a server with `settings`, once its models are loaded (and warm)."""
    app = create_app(settings)
    with TestClient(app) as client:
        deadline = time.monotonic() + 300
        while client.get("/v2/health/ready").status_code != 200:
            state = app.state.server
            assert state.load_error is None, state.load_error
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.1)
        yield client


@pytest.fixture(scope="session")
def app_client() -> Iterator[TestClient]:
    """One warmed-up server for the whole test session (loading models takes seconds)."""
    yield from serve(make_settings())


def load_clip(name: str, rate: int = PROTOCOL_RATE) -> np.ndarray:
    """A human speech clip from ../shared/data/speech as float32 mono at `rate`."""
    path = SPEECH_DIR / name
    if not path.is_file():
        pytest.skip(f"{path} not present (../shared is missing)")
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return resample(data.mean(axis=1), sr, rate)


def append_event(samples: np.ndarray) -> str:
    return json.dumps(
        {
            "type": "input_audio_buffer.append",
            "audio": base64.b64encode(float_to_pcm16(samples)).decode(),
        }
    )


def stream_audio(
    ws: Any, samples: np.ndarray, rate: int = PROTOCOL_RATE, chunk_ms: int = 20
) -> None:
    step = rate * chunk_ms // 1000
    for i in range(0, samples.size, step):
        ws.send_text(append_event(samples[i : i + step]))


def user_text_item(text: str) -> dict[str, Any]:
    """A typed user message, as `conversation.item.create` carries it."""
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def send_user_text(ws: Any, text: str) -> None:
    """Add a typed user message to the conversation (`conversation.item.create`)."""
    ws.send_text(json.dumps({"type": "conversation.item.create", "item": user_text_item(text)}))


def respond(ws: Any, response: dict[str, Any] | None = None) -> None:
    """Ask for an answer (`response.create`, with `response` options when given)."""
    event: dict[str, Any] = {"type": "response.create"}
    if response is not None:
        event["response"] = response
    ws.send_text(json.dumps(event))


def ask(ws: Any, text: str, response: dict[str, Any] | None = None) -> None:
    """A typed user turn: the user message, then `response.create`."""
    send_user_text(ws, text)
    respond(ws, response)


def receive_until(
    ws: Any, stop: Callable[[dict[str, Any]], bool], limit: int = 20_000
) -> list[dict[str, Any]]:
    """Collect events until `stop(event)` is true (that event included)."""
    events = []
    for _ in range(limit):
        event = ws.receive_json()
        events.append(event)
        if stop(event):
            return events
    raise AssertionError(
        f"no terminating event in {limit} events; last types: {[e['type'] for e in events[-10:]]}"
    )


def is_done(event: dict[str, Any]) -> bool:
    return event["type"] == ResponseDone.TYPE


def audio_seconds(events: list[dict[str, Any]], rate: int = PROTOCOL_RATE) -> float:
    total = sum(len(base64.b64decode(e["delta"])) for e in events if e["type"] == AudioDelta.TYPE)
    return total / 2 / rate


def answer_text(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["delta"] for e in events if e["type"] in (AudioTranscriptDelta.TYPE, TextDelta.TYPE)
    )


@pytest.fixture(scope="session")
def shared_components(app_client: TestClient) -> Any:
    return app_client.app.state.server.components  # type: ignore[attr-defined]


def app_with(components: Any, **setting_overrides: Any) -> Any:
    """An app that reuses already-loaded components (optionally with parts replaced)."""
    settings = make_settings(warmup=False, **setting_overrides)
    if setting_overrides:  # sessions read their settings from the components
        changed = dataclasses.replace(components.settings, **setting_overrides)
        components = dataclasses.replace(components, settings=changed)
    app = create_app(settings)
    app.state.server.ready = True
    app.state.server.components = components
    app.state.server.metrics.watch_llm(components.llm.stats)
    return app


def client_with(components: Any, **setting_overrides: Any) -> TestClient:
    """A TestClient over an app sharing the loaded models. Not entered as a context
    manager on purpose: its lifespan would load the models again."""
    return TestClient(app_with(components, **setting_overrides))


def run_live(app: Any) -> Iterator[str]:
    """Serve `app` with a real uvicorn server on a free loopback port; yields host:port."""
    import socket
    import threading

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True, name="uvicorn-test")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_server(shared_components: Any) -> Iterator[str]:
    """A real uvicorn server on a free loopback port (for clients that need a real socket)."""
    yield from run_live(app_with(shared_components))


def post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    """POST `body` as JSON with non-ASCII escaped, as most clients send it (so a lone
    surrogate travels as the escape "\\ud800", which httpx's own encoder refuses)."""
    return client.post(url, content=json.dumps(body), headers={"content-type": "application/json"})


@pytest.fixture(scope="session")
def thinking_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Qwen2 whose tokenizer has R1's `<think>`/`</think>` and whose
    chat template opens thinking in the generation prompt (as R1-Distill's does)."""
    from tests.engine.tiny_models import build_tiny, save_think_tokenizer

    out = tmp_path_factory.mktemp("qwen2-think")
    build_tiny(out, model_type="qwen2", vocab_size=272, eos_token_id=256, num_key_value_heads=1)
    save_think_tokenizer(out)
    return out


@pytest.fixture(scope="session")
def thinking_client(thinking_model: Path) -> Iterator[TestClient]:
    """A server whose LLM is the tiny thinking model (R1VOICE_LLM_MODEL=<its directory>)."""
    yield from serve(
        make_settings(llm_model=str(thinking_model), quantization="none", warmup=False)
    )
