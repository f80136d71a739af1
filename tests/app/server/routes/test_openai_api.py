"""OpenAI-compatible HTTP: chat completions (plain and streamed), errors in OpenAI's shape."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient

MODEL = "smollm2-135m-instruct"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def test_models_lists_the_llm(app_client: TestClient) -> None:
    assert [m["id"] for m in app_client.get("/v1/models").json()["data"]] == [MODEL]


def test_chat_completion(app_client: TestClient) -> None:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 24, "temperature": 0}
    reply = app_client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["object"] == "chat.completion"
    assert "paris" in data["choices"][0]["message"]["content"].lower()
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert 0 < usage["completion_tokens"] <= 24


def test_streamed_chat_completion_matches_plain(app_client: TestClient) -> None:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 24, "temperature": 0}
    plain = app_client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"][
        "content"
    ]
    with app_client.stream(
        "POST",
        "/v1/chat/completions",
        json={**body, "stream": True, "stream_options": {"include_usage": True}},
    ) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in reply.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == plain
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] in (
        "stop",
        "length",
    )
    assert chunks[-1]["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"model": MODEL, "messages": []}, 400, "invalid_value", "messages"),
        (
            {"model": MODEL, "messages": QUESTION, "temperature": "hot"},
            400,
            "invalid_value",
            "temperature",
        ),
        (
            {"model": MODEL, "messages": QUESTION, "max_tokens": 0},
            400,
            "invalid_value",
            "max_tokens",
        ),
        ({"model": MODEL, "messages": QUESTION, "n": 3}, 400, "invalid_value", "n"),
        ({"model": "gpt-17", "messages": QUESTION}, 404, "model_not_found", "model"),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": "hi " * 20000}]},
            400,
            None,
            None,
        ),
    ],
)
def test_bad_requests_get_openai_errors(
    app_client: TestClient, body: dict[str, Any], status: int, code: str | None, param: str | None
) -> None:
    reply = app_client.post("/v1/chat/completions", json=body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["message"]
    if code:
        assert error["code"] == code
    if param:
        assert error["param"] == param


def test_official_sdk_chat(live_server: str) -> None:
    client = openai.OpenAI(api_key="sk-test", base_url=f"http://{live_server}/v1")
    reply = client.chat.completions.create(
        model=MODEL, messages=QUESTION, max_tokens=24, temperature=0
    )  # type: ignore[arg-type]
    assert "paris" in (reply.choices[0].message.content or "").lower()
    streamed = client.chat.completions.create(
        model=MODEL, messages=QUESTION, max_tokens=24, temperature=0, stream=True
    )  # type: ignore[arg-type]
    assert (
        "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        == reply.choices[0].message.content
    )
