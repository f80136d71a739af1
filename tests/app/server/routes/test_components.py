"""`GET /v1/r1voice/components`: the palettes of the page, stage by stage."""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.llm.catalog import LLMCatalog
from app.server.app import create_app
from tests.conftest import client_with, make_settings

QWEN = "qwen2.5-coder-0.5b-instruct"  # prepared by `make`


def _by_id(rows: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {row["id"]: row for row in rows}


def test_lists_each_stage_with_availability(shared_components: Any) -> None:
    body = client_with(shared_components).get("/v1/r1voice/components").json()
    assert body["ready"] is True

    asr = _by_id(body["asr"])
    loaded = shared_components.asr.name
    assert asr[loaded]["available"] and asr[loaded]["active"]
    assert body["asr"][0]["id"] == loaded  # the server's model first
    assert asr["whisper-base"]["available"] and not asr["whisper-base"]["active"]
    assert asr["whisper-base"]["reason"] is None  # installed by `make`: a session may choose it
    offered = [row["id"] for row in body["asr"] if row["available"]]
    assert offered == shared_components.transcribers.names()
    for row in body["asr"]:
        assert row["available"] or row["reason"]  # what to run to get it
    assert asr["whisper-tiny.en"]["languages"] == ["en"]
    assert asr["whisper-tiny.en"]["label"] == "whisper-tiny.en (English only)"
    assert "zh" in asr["whisper-base"]["languages"]

    turns = _by_id(body["turn_detection"])
    assert turns["server_vad"]["available"] and turns[None]["available"]
    semantic = turns["semantic_vad"]
    assert semantic["available"]

    llm = _by_id(body["llm"])
    default = shared_components.llm.model
    assert body["llm"][0]["id"] == default  # the server's model first
    assert llm[default]["available"] and llm[default]["active"] and llm[default]["loaded"]
    assert llm[default]["backend"] == shared_components.llm.name
    offered = [row["id"] for row in body["llm"] if row["available"]]
    assert offered == shared_components.llms.names()
    assert QWEN in offered and not llm[QWEN]["active"]  # prepared: a session may choose it
    for row in body["llm"]:
        assert row["available"] or row["reason"]  # what keeps it from being chosen

    voices = _by_id(body["tts"])
    assert set(voices) == set(shared_components.tts.voices())
    default = shared_components.tts.default_name
    assert voices[default]["default"] and voices[default]["engine"] == "piper"
    assert voices["alloy"]["alias_of"] == default
    if shutil.which("espeak-ng"):
        assert voices["espeak-ng"]["engine"] == "espeak-ng"
        assert voices["espeak-ng:de"]["label"] == "espeak-ng: German"
        assert voices["espeak-ng:cmn"]["language"] == "cmn"
    assert voices[default]["language"] == "en"
    assert voices["auto"]["engine"] == "auto"
    assert all(row["available"] and row["reason"] is None for row in body["tts"])


def test_an_unprepared_llm_is_listed_with_its_reason(
    shared_components: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.catalog import registry

    reason = f"model '{QWEN}' is not prepared: run `r1voice models prepare {QWEN}`"
    rows = [registry.ModelRow(QWEN, "llm", "not prepared", reason)]
    monkeypatch.setattr(registry, "list_models", lambda: rows)
    catalog = LLMCatalog(shared_components.llm, load=lambda name: shared_components.llm)
    body = client_with(dataclasses.replace(shared_components, llms=catalog)).get(
        "/v1/r1voice/components"
    )
    llm = _by_id(body.json()["llm"])
    assert llm[QWEN]["available"] is False and llm[QWEN]["reason"] == reason
    assert llm[shared_components.llm.model]["active"]


def test_503_while_models_load() -> None:
    client = TestClient(create_app(make_settings(warmup=False)))  # no lifespan: nothing loaded
    response = client.get("/v1/r1voice/components")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert response.json()["ready"] is False
