"""KServe v2 liveness/readiness: 503 until models are loaded and warmed up, then 200."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app import components as components_module
from app.server.app import create_app
from tests.conftest import client_with, make_settings
from tests.fakes import ScriptedLLM


def test_ready_is_503_before_warmup_and_200_after(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = app_client.app.state.server.components  # type: ignore[attr-defined]
    release = threading.Event()
    warmed = threading.Event()

    def gated_load(settings: object) -> object:
        release.wait(timeout=60)  # loading "takes" until the test lets it finish
        return loaded

    real_warm_up = components_module.warm_up

    def tracked_warm_up(components: object) -> None:
        real_warm_up(components)  # type: ignore[arg-type]
        warmed.set()

    monkeypatch.setattr(components_module, "load_components", gated_load)
    monkeypatch.setattr(components_module, "warm_up", tracked_warm_up)
    app = create_app(make_settings())
    with TestClient(app) as client:
        assert client.get("/v2/health/live").status_code == 200
        assert client.get("/v2/health/ready").status_code == 503
        assert client.get("/v2/models/smollm2-135m-instruct/ready").status_code == 503
        with (
            pytest.raises(WebSocketDisconnect) as refused,
            client.websocket_connect("/v1/realtime?dialect=beta") as ws,
        ):
            ws.receive_json()
        assert refused.value.code == 1013  # try again later
        release.set()
        deadline = time.monotonic() + 60
        while client.get("/v2/health/ready").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert warmed.is_set(), "ready before warm-up finished"
        assert client.get("/v2/models/smollm2-135m-instruct/ready").json() == {
            "name": "smollm2-135m-instruct",
            "ready": True,
        }
        state = app.state.server
        state.components = None  # this app borrowed the shared components; do not close them


def test_unknown_model_ready_is_404(app_client: TestClient) -> None:
    response = app_client.get("/v2/models/gpt-17/ready")
    assert response.status_code == 404
    assert "not served" in response.json()["error"]


def test_failed_load_keeps_not_ready_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_load(settings: object) -> object:
        raise RuntimeError("cannot load ASR model 'whisper-tiny.en': corrupt")

    monkeypatch.setattr(components_module, "load_components", broken_load)
    with TestClient(create_app(make_settings())) as client:
        deadline = time.monotonic() + 10
        while "error" not in client.get("/v2/health/ready").json():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        response = client.get("/v2/health/ready")
        assert response.status_code == 503
        assert "whisper-tiny.en" in response.json()["error"]
        assert client.get("/v2/health/live").status_code == 200


def test_page_is_served(app_client: TestClient) -> None:
    page = app_client.get("/")
    assert page.status_code == 200
    assert 'id="talk"' in page.text
    for asset in (
        "/web/app.js",
        "/web/capture-worklet.js",
        "/web/player-worklet.js",
        "/web/style.css",
    ):
        assert app_client.get(asset).status_code == 200, asset


class DeadEngineLLM(ScriptedLLM):
    """A backend whose engine loop died (see tests/engine: the real engine reports it)."""

    def fatal_error(self) -> str | None:
        return "the engine loop stopped (LoopKiller: simulated)"


def test_a_dead_engine_fails_liveness_and_readiness(shared_components: Any) -> None:
    client = client_with(dataclasses.replace(shared_components, llm=DeadEngineLLM()))
    live, ready = client.get("/v2/health/live"), client.get("/v2/health/ready")
    assert live.status_code == 503 and "engine loop stopped" in live.json()["error"]
    assert ready.status_code == 503 and "engine loop stopped" in ready.json()["error"]
    healthy = client_with(dataclasses.replace(shared_components, llm=ScriptedLLM()))
    assert healthy.get("/v2/health/live").status_code == 200
