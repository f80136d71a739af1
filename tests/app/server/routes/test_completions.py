"""POST /v1/completions through the official `openai` SDK and plain HTTP: a raw prompt,
plain and streamed, usage and finish reasons from the engine, n=1 only, priority; and
chat through the SDK with R1 reasoning separated."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient

from app.llm import ChatMessage, GenerationParams, LLMBusyError, LLMDelta
from tests.app.llm.scripted import ScriptedLLM
from tests.conftest import client_with, post_json

MODEL = "smollm2-135m-instruct"
PROMPT = "The capital of France is"


def sdk(client: TestClient) -> openai.OpenAI:
    return openai.OpenAI(base_url="http://testserver/v1", api_key="x", http_client=client)


class RawScriptedLLM(ScriptedLLM):
    """The scripted backend, also for raw prompts (recorded as one user message)."""

    def stream_text(
        self, prompt: str, params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        return self.stream_chat([ChatMessage("user", prompt)], params, request_id)


def test_sdk_completion_plain_and_streamed(app_client: TestClient, shared_components: Any) -> None:
    client = sdk(app_client)
    plain = client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=5, temperature=0)
    choice = plain.choices[0]
    assert plain.object == "text_completion" and choice.text.strip()
    assert choice.finish_reason == "length"
    tokenizer = shared_components.llm.tokenizer
    assert plain.usage is not None
    assert plain.usage.prompt_tokens == len(tokenizer(PROMPT)["input_ids"])
    assert plain.usage.completion_tokens == 5
    assert plain.usage.total_tokens == plain.usage.prompt_tokens + 5
    chunks = list(
        client.completions.create(
            model=MODEL,
            prompt=PROMPT,
            max_tokens=5,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].text for c in chunks if c.choices) == choice.text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length" and set(finishes[:-1]) == {None}
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    counts = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    assert counts == (plain.usage.prompt_tokens, 5, plain.usage.total_tokens)
    # the same prompt again: its whole KV blocks come from the prefix cache
    block = shared_components.llm.llm.stats().kv_block_size
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == plain.usage.prompt_tokens // block * block


def test_a_stop_string_ends_with_stop_and_echo_prepends(app_client: TestClient) -> None:
    body = {"model": MODEL, "prompt": PROMPT, "max_tokens": 8, "temperature": 0}
    first = app_client.post("/v1/completions", json=body).json()["choices"][0]["text"]
    stop = first.strip().split()[0]
    reply = app_client.post("/v1/completions", json={**body, "stop": [stop], "echo": True})
    data = reply.json()
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["choices"][0]["text"].startswith(PROMPT)
    assert stop not in data["choices"][0]["text"][len(PROMPT) :]


@pytest.mark.parametrize(
    ("change", "status", "param"),
    [
        ({"n": 2}, 400, "n"),
        ({"logprobs": 1}, 400, "logprobs"),
        ({"prompt": ["a", "b"]}, 400, "prompt"),
        ({"max_tokens": 0}, 400, "max_tokens"),
        ({"model": "gpt-17"}, 404, "model"),
    ],
)
def test_bad_requests_are_refused_naming_the_field(
    app_client: TestClient, change: dict[str, Any], status: int, param: str
) -> None:
    body = {"model": MODEL, "prompt": PROMPT, **change}
    reply = app_client.post("/v1/completions", json=body)
    assert reply.status_code == status
    assert reply.json()["error"]["param"] == param


def test_crafted_inputs_are_400s_not_500s(app_client: TestClient) -> None:
    """Bugs: a lone surrogate reached the tokenizer (500); seed 2**64 reached torch (500)."""
    for change, code in (
        ({"prompt": "hi \ud800"}, "invalid_value"),
        ({"seed": 2**64}, "invalid_value"),
        ({"priority": 10**400}, "invalid_value"),
    ):
        body = {"model": MODEL, "prompt": PROMPT, **change}
        reply = post_json(app_client, "/v1/completions", body)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["code"] == code


def test_sdk_refusal_of_n(app_client: TestClient) -> None:
    with pytest.raises(openai.BadRequestError, match="n=1"):
        sdk(app_client).completions.create(model=MODEL, prompt=PROMPT, n=2)


def test_priority_and_sampling_reach_the_backend(shared_components: Any) -> None:
    llm = RawScriptedLLM(["Paris", "."], prompt_tokens=6, completion_tokens=3)
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    body = {"model": MODEL, "prompt": PROMPT, "max_tokens": 7, "priority": 5, "seed": 3}
    data = client.post("/v1/completions", json={**body, "top_p": 0.5, "stop": "x"}).json()
    assert data["choices"][0]["text"] == "Paris."
    assert data["usage"] == {"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9}
    params = llm.requests[0][1]
    assert (params.priority, params.seed, params.max_tokens) == (5, 3, 7)
    assert (params.top_p, params.stop) == (0.5, ("x",))


def test_a_chat_only_backend_refuses_raw_prompts(shared_components: Any) -> None:
    client = client_with(dataclasses.replace(shared_components, llm=ScriptedLLM(["Hi"])))
    reply = client.post("/v1/completions", json={"model": MODEL, "prompt": PROMPT})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "unsupported"


def test_sdk_chat_streams_reasoning_apart(shared_components: Any) -> None:
    llm = ScriptedLLM(
        ["Two plus", " two.</think>", "It is ", "4."],
        opens_reasoning=True,
        prompt_tokens=11,
        completion_tokens=6,
    )
    client = sdk(client_with(dataclasses.replace(shared_components, llm=llm)))
    messages: Any = [{"role": "user", "content": "2+2?"}]
    plain = client.chat.completions.create(model=MODEL, messages=messages)
    message = plain.choices[0].message
    assert message.content == "It is 4." and plain.choices[0].finish_reason == "stop"
    assert (message.model_extra or {})["reasoning_content"] == "Two plus two."
    assert plain.usage is not None and plain.usage.completion_tokens == 6
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert reasoning == "Two plus two."
    assert "".join(d.content or "" for d in deltas) == "It is 4."
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 11
    assert json.loads(chunks[-1].model_dump_json())["choices"] == []


class BusyRawLLM(RawScriptedLLM):
    def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        raise LLMBusyError("the engine's waiting queue is full; retry shortly", retry_after_s=2.6)


def test_busy_is_429_with_retry_after_on_completions_and_generate(shared_components: Any) -> None:
    client = client_with(dataclasses.replace(shared_components, llm=BusyRawLLM([])))
    reply = client.post("/v1/completions", json={"model": MODEL, "prompt": PROMPT})
    assert reply.status_code == 429 and reply.headers["retry-after"] == "3"
    assert reply.json()["error"]["code"] == "server_busy"
    body = {"text_input": PROMPT}
    for path in ("generate", "generate_stream"):
        refused = client.post(f"/v2/models/{MODEL}/{path}", json=body)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "3"
        assert "queue is full" in refused.json()["error"]


def test_a_client_that_goes_away_aborts_the_request(
    live_server: str, shared_components: Any
) -> None:
    """Closing a streamed completion closes the connection; the server aborts the
    engine request (counted as finished_reason "abort") and frees its KV blocks."""
    import time

    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    def aborted() -> float:
        text = httpx.get(f"http://{live_server}/metrics", timeout=10).text
        key = {"finished_reason": "abort", "model_name": MODEL}
        return sum(
            s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name == "vllm:request_success_total" and s.labels == key
        )

    before = aborted()
    body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 400, "stream": True}
    with httpx.stream("POST", f"http://{live_server}/v1/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        next(line for line in r.iter_lines() if line.startswith("data: "))
    deadline = time.monotonic() + 60
    while aborted() < before + 1 or shared_components.llm.stats()["num_running"]:
        assert time.monotonic() < deadline, "the request was not aborted"
        time.sleep(0.1)
    assert shared_components.llm.stats()["kv_blocks_used"] == 0
