"""What the `remote` backend sends and reads (app/llm/remote_wire.py), without a server:
SSE lines as vLLM and llama.cpp's server write them, request bodies, refusals."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest

from app.llm import GenerationParams, LLMBackendError, LLMDelta
from app.llm.remote_wire import read_deltas, refusal, remote_request_id, request_body


def parse(lines: list[str], **options: Any) -> list[LLMDelta]:
    """`read_deltas` over SSE lines as a vLLM server writes them."""

    async def source() -> AsyncGenerator[str, None]:
        for line in lines:
            yield line

    async def collect() -> list[LLMDelta]:
        return [d async for d in read_deltas(source(), "http://unused/v1", **options)]

    return asyncio.run(collect())


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return "data: " + json.dumps({"choices": choices, **extra})


def test_vllm_shaped_streams_are_read_as_typed_deltas() -> None:
    usage = {
        "prompt_tokens": 5,
        "completion_tokens": 4,
        "prompt_tokens_details": {"cached_tokens": 2},
    }
    lines = [
        chunk({"role": "assistant", "content": ""}),
        "",
        chunk({"reasoning": "Think."}),  # newer vLLM names it `reasoning`
        chunk({"content": "Paris."}),
        chunk({}, "tool_calls"),
        chunk(None, usage=usage),
        "data: [DONE]",
    ]
    deltas = parse(lines, on_usage_estimated=lambda: pytest.fail("the remote sent usage"))
    assert [d.text for d in deltas] == ["<think>Think.", "</think>Paris.", ""]
    final = deltas[-1]
    assert (final.finish_reason, final.prompt_tokens, final.completion_tokens) == ("stop", 5, 4)
    assert final.cached_tokens == 2
    estimated: list[str] = []
    opened = parse(
        [chunk({"reasoning_content": "Hm."}), chunk({"content": "Yes."}, "length")],
        opens_reasoning=True,
        on_usage_estimated=lambda: estimated.append("estimated"),
    )
    assert [d.text for d in opened] == ["Hm.", "</think>Yes.", ""]
    # no `usage` (llama.cpp's server sends none): the chunks with text are counted
    assert opened[-1].finish_reason == "length" and opened[-1].completion_tokens == 2
    assert estimated == ["estimated"]  # once, for the remote's `usage_estimated` counter
    raw = parse(['data: {"choices": [{"index": 0, "text": "lo", "finish_reason": "stop"}]}'])
    assert [d.text for d in raw] == ["lo", ""]
    with pytest.raises(LLMBackendError, match="unfinished"):
        parse([chunk({"content": "cut"})])
    with pytest.raises(LLMBackendError, match="out of memory"):
        parse([chunk({"content": "a"}), 'data: {"error": {"message": "out of memory"}}'])


@pytest.mark.parametrize("budget", [None, 0, 64])
def test_the_thinking_budget_is_forwarded_only_when_set(budget: int | None) -> None:
    body = request_body("r1", GenerationParams(max_reasoning_tokens=budget), send_priority=False)
    assert body.get("max_reasoning_tokens", "absent") == ("absent" if budget is None else budget)


def test_the_request_id_travels_as_a_uuid_and_a_bare_refusal_is_named() -> None:
    """llama.cpp's server refuses a non-UUID `X-Request-Id` with a bare 400 (no body)."""
    sent = remote_request_id("resp_abc")
    assert str(uuid.UUID(sent)) == sent and remote_request_id("resp_abc") == sent
    assert remote_request_id("resp_abd") != sent
    error = refusal(httpx.Response(400), "http://unused/v1")
    assert str(error).endswith("answered 400: Bad Request (no body)")
