"""The client side of `bench load` and `bench soak`: one HTTP chat stream, one WebSocket
text turn, the adversarial requests, and what the server's /metrics and /proc say."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

from app.protocol.server_events import ResponseDone, TextDelta, ga

QUESTION = [{"role": "user", "content": "Name one colour."}]


@dataclass
class Outcome:
    """One request as the client saw it."""

    kind: str  # "http", "ws", "adversarial:<name>"
    # HTTP status, or a response's ("completed", "incomplete", ...), or "closed:<code>"
    status: int | str
    seconds: float  # arrival to the end (or to the refusal)
    ttft_s: float | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


async def chat_stream(client: httpx.AsyncClient, max_tokens: int = 16, **body: Any) -> Outcome:
    """A streamed /v1/chat/completions; TTFT is the first content delta."""
    start = time.monotonic()
    payload = {"model": "r1voice", "messages": QUESTION, "max_tokens": max_tokens, "stream": True}
    ttft, text = None, ""
    try:
        async with client.stream("POST", "/v1/chat/completions", json={**payload, **body}) as r:
            if r.status_code != 200:
                await r.aread()
                return Outcome("http", r.status_code, time.monotonic() - start, error=r.text[:200])
            async for line in r.aiter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        return Outcome("http", "stream_error", time.monotonic() - start)
                    for choice in chunk.get("choices", []):
                        if choice["delta"].get("content"):
                            ttft = ttft or time.monotonic() - start
                            text += choice["delta"]["content"]
            done = text != "" or ttft is None
            return Outcome("http", 200 if done else "empty", time.monotonic() - start, ttft)
    except httpx.HTTPError as exc:
        return Outcome("http", "transport_error", time.monotonic() - start, error=repr(exc))


async def ws_turn(
    url: str,
    max_tokens: int = 16,
    cancel_after_s: float | None = None,
    leave_after_s: float | None = None,
) -> Outcome:
    """A Realtime text turn; optionally cancelled, or the client vanishing mid-answer."""
    start = time.monotonic()
    try:
        async with websockets.connect(url, max_size=None, open_timeout=30) as ws:
            json.loads(await ws.recv())  # session.created
            session = {"type": "realtime", "output_modalities": ["text"]}
            await ws.send(json.dumps({"type": "session.update", "session": session}))
            item = {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": QUESTION[0]["content"]}]}  # fmt: skip
            await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
            await ws.send(json.dumps({"type": "response.create",
                                      "response": {"max_output_tokens": max_tokens}}))  # fmt: skip
            ttft, asked = None, time.monotonic()  # a refusal is timed from the ask
            while True:
                budget = 120.0 - (time.monotonic() - start)
                event = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, budget)))
                if event["type"] == ga.RENAMED[TextDelta] and ttft is None:
                    ttft = time.monotonic() - start
                    if leave_after_s is not None:
                        await asyncio.sleep(leave_after_s)
                        return Outcome("ws", "left", time.monotonic() - start, ttft)
                    if cancel_after_s is not None:
                        await asyncio.sleep(cancel_after_s)
                        await ws.send(json.dumps({"type": "response.cancel"}))
                if event["type"] == ResponseDone.TYPE:
                    status = event["response"]["status"]
                    return Outcome("ws", status, time.monotonic() - start, ttft)
                if event["type"] == "error" and ttft is None:
                    code = event["error"]["code"]
                    return Outcome("ws", f"error:{code}", time.monotonic() - asked)
    except websockets.exceptions.InvalidStatus as exc:
        return Outcome("ws", exc.response.status_code, time.monotonic() - start)
    except websockets.exceptions.ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd else None
        return Outcome("ws", f"closed:{code}", time.monotonic() - start)
    except (OSError, TimeoutError) as exc:
        return Outcome("ws", "transport_error", time.monotonic() - start, error=repr(exc))


ADVERSARIAL: dict[str, dict[str, Any]] = {
    "tiny_temperature": {"temperature": 1e-40},
    "denormal_temperature": {"temperature": 5e-324},
    "huge_seed": {"seed": 2**64},
    "huge_priority": {"priority": 10**400},
    "outranking_priority": {"priority": -(10**9)},
    "huge_top_k": {"top_k": 2**40},
    "lone_surrogate": {"messages": [{"role": "user", "content": "hi \ud800"}]},
    "huge_body": {"messages": [{"role": "user", "content": "x" * 6_000_000}]},
    "deep_nesting": {"messages": [{"role": "user", "content": "hi"}], "stop": None},
}


async def adversarial(client: httpx.AsyncClient, name: str) -> Outcome:
    """One hostile request: it must get a 4xx (or, for the tiny temperatures, succeed)."""
    start = time.monotonic()
    body = {"model": "r1voice", "messages": QUESTION, "max_tokens": 8, **ADVERSARIAL[name]}
    raw = json.dumps(body)  # escapes the lone surrogate as the wire carries it
    if name == "deep_nesting":
        raw = raw[:-1] + ', "tools": ' + "[" * 5000 + "]" * 5000 + "}"
    headers = {"content-type": "application/json"}
    try:
        r = await client.post("/v1/chat/completions", content=raw, headers=headers)
        return Outcome(f"adversarial:{name}", r.status_code, time.monotonic() - start)
    except httpx.HTTPError as exc:
        return Outcome(
            f"adversarial:{name}", "transport_error", time.monotonic() - start, error=repr(exc)
        )


def metric(text: str, name: str) -> float | None:
    """The first sample of `name` in a Prometheus text page."""
    match = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.eE+-]+)$", text, re.M)
    return float(match.group(1)) if match else None


def process_info(pid: int) -> dict[str, int]:
    """RSS (KiB) and thread count of a process, from /proc."""
    info = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                info[key] = int(value.split()[0])
    return {"rss_kib": info.get("VmRSS", 0), "threads": info.get("Threads", 0)}
