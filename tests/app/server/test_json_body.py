"""An API body that does not say it is JSON (curl -d, or no Content-Type) is read as JSON;
one that is not JSON is refused saying so."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

MODEL = "smollm2-135m-instruct"
CHAT = json.dumps(
    {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
)
GENERATE = json.dumps({"text_input": "The capital of France is", "parameters": {"max_tokens": 2}})


@pytest.mark.parametrize(
    "headers",
    [{}, {"content-type": "application/x-www-form-urlencoded"}],
    ids=["no type", "curl -d's form type"],
)
def test_a_json_body_that_does_not_say_so_is_read_as_json(
    app_client: TestClient, headers: dict[str, str]
) -> None:
    chat = app_client.post("/v1/chat/completions", content=CHAT, headers=headers)
    assert chat.status_code == 200, chat.text
    assert chat.json()["object"] == "chat.completion"
    generate = app_client.post(f"/v2/models/{MODEL}/generate", content=GENERATE, headers=headers)
    assert generate.status_code == 200, generate.text
    assert generate.json()["text_output"]


def test_a_body_that_is_not_json_is_refused_saying_so(app_client: TestClient) -> None:
    reply = app_client.post("/v1/chat/completions", content="model=x&messages=y")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert "not valid JSON" in error["message"] and error["param"] is None


def test_an_sdp_offer_keeps_its_own_rules(app_client: TestClient) -> None:
    # the calls route reads a body of no type as the SDP offer it takes, not as JSON
    reply = app_client.post("/v1/realtime/calls", content="v=0")
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "invalid_offer"
