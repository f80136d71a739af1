"""KServe v2 / Triton: server and model metadata, generate and generate_stream (the
generate extension), refusals in its `{"error"}` shape, 503 before readiness."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from app.server.app import create_app
from tests.conftest import make_settings, post_json

MODEL = "smollm2-135m-instruct"
BODY = {"text_input": "The capital of France is", "parameters": {"max_tokens": 6}}


def test_server_and_model_metadata(app_client: TestClient) -> None:
    server = app_client.get("/v2").json()
    assert server["name"] == "r1voice" and "generate" in server["extensions"]
    model = app_client.get(f"/v2/models/{MODEL}").json()
    assert model["name"] == MODEL and model["versions"] == ["1"]
    assert {"name": "text_input", "datatype": "BYTES", "shape": [1]} in model["inputs"]
    assert [o["name"] for o in model["outputs"]] == ["text_output"]
    assert app_client.get("/v2/models/whisper-tiny.en").json()["inputs"] == []
    missing = app_client.get("/v2/models/gpt-17")
    assert missing.status_code == 404 and "not served" in missing.json()["error"]


def test_generate_matches_completions_and_the_stream_matches_generate(
    app_client: TestClient,
) -> None:
    reply = app_client.post(f"/v2/models/{MODEL}/generate", json=BODY)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert (data["model_name"], data["model_version"]) == (MODEL, "1")
    assert data["text_output"].strip() and data["finish_reason"] == "length"
    completion = app_client.post(
        "/v1/completions",
        json={"model": MODEL, "prompt": BODY["text_input"], "max_tokens": 6, "temperature": 0},
    ).json()
    assert completion["choices"][0]["text"] == data["text_output"]  # greedy, same engine
    with app_client.stream("POST", f"/v2/models/{MODEL}/generate_stream", json=BODY) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: ")]
    assert "".join(e["text_output"] for e in events) == data["text_output"]
    assert all(e["model_name"] == MODEL for e in events)
    assert events[-1]["finish_reason"] == "length"
    assert all("finish_reason" not in e for e in events[:-1])


def test_refusals(app_client: TestClient) -> None:
    def post(name: str, body: dict[str, Any]) -> Any:
        return post_json(app_client, f"/v2/models/{name}/generate", body)

    bad = post(MODEL, {"parameters": {}})
    assert bad.status_code == 400 and "text_input" in bad.json()["error"]
    negative = post(MODEL, {"text_input": "Hi", "parameters": {"max_tokens": -1}})
    assert negative.status_code == 400 and "max_tokens" in negative.json()["error"]
    assert post("whisper-tiny.en", BODY).status_code == 404
    assert "generates no text" in post("whisper-tiny.en", BODY).json()["error"]
    assert post("gpt-17", BODY).status_code == 404
    streamed = app_client.post(f"/v2/models/{MODEL}/generate_stream", json={})
    assert streamed.status_code == 400
    surrogate = post(MODEL, {"text_input": "hi \ud800"})  # bug: the tokenizer raised (500)
    assert surrogate.status_code == 400 and "unicode" in surrogate.json()["error"].lower()
    for crafted in ({"seed": 2**64}, {"priority": 10**400}, {"priority": -5}):
        refused = post(MODEL, {"text_input": "Hi", "parameters": crafted})
        assert refused.status_code == 400, (crafted, refused.text)


def test_generate_is_503_before_ready() -> None:
    client = TestClient(create_app(make_settings()))  # lifespan not run: nothing loaded
    reply = client.post(f"/v2/models/{MODEL}/generate", json=BODY)
    assert reply.status_code == 503 and "warming up" in reply.json()["error"]
    assert reply.headers["retry-after"] == "2"
    assert client.get("/v2").status_code == 200
    assert client.get(f"/v2/models/{MODEL}/ready").status_code == 503
