"""/v1/chat/completions bounds R1's thinking: `max_reasoning_tokens`, or OpenAI's
`reasoning_effort` as a budget; the engine cuts it, the route splits thinking from answer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.server.routes.openai_schemas import REASONING_EFFORT_TOKENS
from engine import LLM, SamplingParams
from tests.app.llm.conftest import chat_ids
from tests.app.llm.scripted import ScriptedLLM
from tests.conftest import client_with, post_json

QUESTION = [{"role": "user", "content": "Why is the sky blue?"}]
MAX_TOKENS = 16


def scripted(thinking_client: TestClient, llm: ScriptedLLM) -> TestClient:
    components = thinking_client.app.state.server.components  # type: ignore[attr-defined]
    return client_with(dataclasses.replace(components, llm=llm))


def reference_text(path: Path, budget: int | None) -> str:
    llm = LLM(str(path), quantization="none")
    prompt = chat_ids(llm.tokenizer, QUESTION)
    params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, max_reasoning_tokens=budget)
    return llm.generate([prompt], params)[0].text


def ask(client: TestClient, model: Path, **fields: Any) -> Any:
    body = {"model": str(model), "messages": QUESTION, "max_tokens": MAX_TOKENS, "temperature": 0}
    reply = post_json(client, "/v1/chat/completions", {**body, **fields})
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]["message"]


@pytest.mark.parametrize(
    ("fields", "budget"),
    [
        ({"max_reasoning_tokens": 4}, 4),
        ({"reasoning_effort": "none"}, 0),
        ({"reasoning_effort": "none", "max_reasoning_tokens": 3}, 3),  # the count wins
    ],
)
def test_the_budget_reaches_the_engine(
    thinking_client: TestClient, thinking_model: Path, fields: dict[str, Any], budget: int
) -> None:
    text = reference_text(thinking_model, budget)
    thinking, answer = text.split("</think>", 1)
    assert "<think>" not in answer  # the random model does not think again here
    message = ask(thinking_client, thinking_model, **fields)
    assert message.get("reasoning_content", "") == thinking
    assert message["content"] == answer.lstrip()


def test_no_budget_thinks_on(thinking_client: TestClient, thinking_model: Path) -> None:
    text = reference_text(thinking_model, None)
    assert "</think>" not in text  # random weights never close thinking by themselves
    message = ask(thinking_client, thinking_model, reasoning_effort="high")
    assert message["reasoning_content"] == text and message["content"] == ""


@pytest.mark.parametrize(
    ("fields", "budget"),
    [
        ({}, None),
        ({"reasoning_effort": "low"}, REASONING_EFFORT_TOKENS["low"]),
        ({"reasoning_effort": "medium"}, REASONING_EFFORT_TOKENS["medium"]),
        ({"reasoning_effort": "high"}, None),
        ({"reasoning_effort": "minimal"}, 0),
        ({"reasoning_effort": "high", "max_reasoning_tokens": 7}, 7),
    ],
)
def test_effort_maps_to_a_budget(
    thinking_client: TestClient, thinking_model: Path, fields: dict[str, Any], budget: int | None
) -> None:
    llm = ScriptedLLM(["Paris."])
    client = scripted(thinking_client, llm)
    body = {"model": str(thinking_model), "messages": QUESTION, **fields}
    assert post_json(client, "/v1/chat/completions", body).status_code == 200
    assert llm.requests[0][1].max_reasoning_tokens == budget


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"reasoning_effort": 3}, "reasoning_effort"),
        ({"max_reasoning_tokens": -1}, "max_reasoning_tokens"),
        ({"max_reasoning_tokens": 2**40}, "max_reasoning_tokens"),
        ({"max_reasoning_tokens": "many"}, "max_reasoning_tokens"),
    ],
)
def test_bad_values_are_400_naming_the_field(
    thinking_client: TestClient, thinking_model: Path, fields: dict[str, Any], param: str
) -> None:
    llm = ScriptedLLM(["Paris."])
    client = scripted(thinking_client, llm)
    model = str(thinking_model)
    reply = post_json(
        client, "/v1/chat/completions", {"model": model, "messages": QUESTION, **fields}
    )
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and error["code"] == "invalid_value"
    assert param in error["message"]
    assert not llm.requests
