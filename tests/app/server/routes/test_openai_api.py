"""OpenAI-compatible HTTP: chat completions (plain and streamed), errors in OpenAI's shape."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
from typing import Any

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from tests.app.llm.conftest import chat_ids
from tests.app.llm.scripted import ScriptedLLM
from tests.conftest import client_with, post_json

MODEL = "smollm2-135m-instruct"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def sse_chunks(client: TestClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON chunks of a streamed completion (the `[DONE]` line checked and dropped)."""
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in reply.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def test_models_lists_the_llm(app_client: TestClient) -> None:
    assert [m["id"] for m in app_client.get("/v1/models").json()["data"]] == [MODEL]


def test_a_model_is_retrieved_by_its_name_as_the_sdk_asks(app_client: TestClient) -> None:
    client = openai.OpenAI(base_url="http://testserver/v1", api_key="x", http_client=app_client)
    for name in (MODEL, "r1voice"):
        card = client.models.retrieve(name)
        assert (card.id, card.object, card.owned_by) == (MODEL, "model", "r1voice")
        assert card.created > 0
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("gpt-4o")
    assert missing.value.code == "model_not_found" and MODEL in missing.value.message
    assert "R1VOICE_LLM_MODEL" in missing.value.message  # how to serve another one


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
    ],
)
def test_options_it_cannot_honour_are_refused_by_name(
    app_client: TestClient, extra: dict[str, Any], param: str
) -> None:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 4, **extra}
    reply = post_json(app_client, "/v1/chat/completions", body)
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == param
    # what asks for nothing of the kind still answers
    plain = {**body, "logprobs": False, "response_format": {"type": "text"}}
    plain.pop("top_logprobs", None)
    assert post_json(app_client, "/v1/chat/completions", plain).status_code == 200


def test_chat_completion(app_client: TestClient) -> None:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 24, "temperature": 0}
    reply = post_json(app_client, "/v1/chat/completions", body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["object"] == "chat.completion"
    assert "paris" in data["choices"][0]["message"]["content"].lower()
    assert data["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(("max_tokens", "finish_reason"), [(64, "stop"), (3, "length")])
def test_usage_and_finish_reason_are_exact(
    app_client: TestClient, shared_components: Any, max_tokens: int, finish_reason: str
) -> None:
    tokenizer = shared_components.llm.tokenizer
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": max_tokens, "temperature": 0}
    data = app_client.post("/v1/chat/completions", json=body).json()
    content = data["choices"][0]["message"]["content"]
    assert data["choices"][0]["finish_reason"] == finish_reason
    prompt_tokens = len(chat_ids(tokenizer, QUESTION))
    # every generated token: the answer's own, and the end-of-text token when it stopped
    completion_tokens = (
        len(tokenizer.encode(content, add_special_tokens=False)) + 1
        if finish_reason == "stop"
        else max_tokens
    )
    usage = data["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (
        prompt_tokens,
        completion_tokens,
        prompt_tokens + completion_tokens,
    )
    cached = usage.get("prompt_tokens_details", {}).get("cached_tokens")
    assert cached is None or 0 <= cached <= prompt_tokens
    chunks = sse_chunks(app_client, {**body, "stream_options": {"include_usage": True}})
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1]) == content
    assert chunks[-2]["choices"][0]["finish_reason"] == finish_reason
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-2]] == [None] * (len(chunks) - 2)
    assert chunks[-1]["choices"] == []
    streamed = chunks[-1]["usage"]
    assert (streamed["prompt_tokens"], streamed["completion_tokens"]) == (
        prompt_tokens,
        completion_tokens,
    )


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
        # crafted numbers (bug: a 500, and for priority a request left in the engine)
        ({"model": MODEL, "messages": QUESTION, "seed": 2**64}, 400, "invalid_value", "seed"),
        (
            {"model": MODEL, "messages": QUESTION, "priority": 10**400},
            400,
            "invalid_value",
            "priority",
        ),
        (  # below the HTTP floor: voice turns' class
            {"model": MODEL, "messages": QUESTION, "priority": -(10**9)},
            400,
            "invalid_value",
            "priority",
        ),
        ({"model": MODEL, "messages": QUESTION, "top_k": 2**40}, 400, "invalid_value", "top_k"),
        (  # bug: a lone surrogate reached the tokenizer
            {"model": MODEL, "messages": [{"role": "user", "content": "hi \ud800"}]},
            400,
            "invalid_value",
            None,
        ),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": "hi " * 20000}]},
            400,
            "context_length_exceeded",
            "messages",
        ),
    ],
)
def test_bad_requests_get_openai_errors(
    app_client: TestClient, body: dict[str, Any], status: int, code: str | None, param: str | None
) -> None:
    reply = post_json(app_client, "/v1/chat/completions", body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["message"]
    if code:
        assert error["code"] == code
    if param:
        assert error["param"] == param


def test_a_tiny_temperature_fails_no_request_batched_with_it(live_server: str) -> None:
    """Bug: temperature 1e-40 made the sampler produce NaN and the engine failed every
    request of that step; now a tiny temperature is greedy and nobody else notices."""
    url = f"http://{live_server}/v1/chat/completions"
    temperatures = [0.7, 1e-40, 0.7, 5e-324, 0.7, 0.0]

    def ask(temperature: float) -> httpx.Response:
        body = {"model": MODEL, "messages": QUESTION, "max_tokens": 12, "temperature": temperature}
        return httpx.post(url, json=body, timeout=120)

    with concurrent.futures.ThreadPoolExecutor(len(temperatures)) as pool:
        replies = list(pool.map(ask, temperatures))
    assert [r.status_code for r in replies] == [200] * len(temperatures), [r.text for r in replies]
    texts = [r.json()["choices"][0]["message"]["content"] for r in replies]
    assert texts[1] == texts[3] == texts[5]  # greedy, all three


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


def scripted_client(shared_components: Any, llm: ScriptedLLM) -> TestClient:
    return client_with(dataclasses.replace(shared_components, llm=llm))


R1_ANSWER = ["Two plus", " two.</th", "ink>\n\nIt is ", "4."]


def test_scripted_reasoning_finish_and_usage(shared_components: Any) -> None:
    llm = ScriptedLLM(
        R1_ANSWER,
        finish_reason="length",
        prompt_tokens=31,
        completion_tokens=9,
        cached_tokens=16,
        opens_reasoning=True,
    )
    client = scripted_client(shared_components, llm)
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 9}
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "It is 4.",
                "reasoning_content": "Two plus two.",
            },
            "finish_reason": "length",
        }
    ]
    usage = {
        "prompt_tokens": 31,
        "completion_tokens": 9,
        "total_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 16},
    }
    assert data["usage"] == usage
    chunks = sse_chunks(client, {**body, "stream_options": {"include_usage": True}})
    assert [c["choices"][0]["delta"] for c in chunks[:-1]] == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Two plus"},
        {"reasoning_content": " two."},
        {"content": "It is "},
        {"content": "4."},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * 5 + ["length"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == usage
    assert llm.requests[0][1].max_tokens == 9


def test_streamed_usage_only_when_asked(shared_components: Any) -> None:
    client = scripted_client(shared_components, ScriptedLLM(["Paris."], prompt_tokens=7))
    chunks = sse_chunks(client, {"model": MODEL, "messages": QUESTION})
    assert all("usage" not in c for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, "stop"]
    plain = client.post("/v1/chat/completions", json={"model": MODEL, "messages": QUESTION})
    assert plain.json()["usage"] == {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
    assert "prompt_tokens_details" not in plain.json()["usage"]  # cached tokens unknown


def test_a_stream_without_a_final_delta_is_an_error_not_success(shared_components: Any) -> None:
    client = scripted_client(shared_components, ScriptedLLM(["Paris."], final=False))
    body = {"model": MODEL, "messages": QUESTION}
    reply = client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 500
    assert reply.json()["error"] == {
        "message": "the scripted backend ended the stream without a finish reason",
        "type": "server_error",
        "param": None,
        "code": "llm_error",
    }
    chunks = sse_chunks(client, body)
    assert chunks[-1] == {
        "error": {
            "message": "the scripted backend ended the stream without a finish reason",
            "type": "server_error",
            "code": "llm_error",
        }
    }
    assert all(c.get("choices", [{}])[0].get("finish_reason") is None for c in chunks[:-1])
