"""The no-dependency driver: an asyncio client (httpx) sending each request of the
workload at its own arrival time, open loop (a slow server does not slow the arrivals),
one connection per request in flight, streaming, one record each."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.serve.records import StreamTimer, failed, refused
from bench.serve.workload import Request

TIMEOUT_S = 600.0  # one request, connect to last token


async def _one(client: Any, url: str, model: str, req: Request, start: float) -> dict[str, Any]:
    record = await _send(client, url, model, req, start)
    record["lag"] = round(record["sent"] - req.t, 4)  # the client behind its schedule
    return record


async def _send(client: Any, url: str, model: str, req: Request, start: float) -> dict[str, Any]:
    import httpx

    await asyncio.sleep(max(0.0, start + req.t - time.perf_counter()))
    sent = time.perf_counter()
    timer = StreamTimer(sent)
    try:
        async with client.stream("POST", url, json=req.body(model)) as response:
            if response.status_code in (429, 503):
                await response.aread()
                return refused(req.kind, req.index, response.status_code, sent - start)
            if response.status_code != 200:
                return failed(req.kind, req.index, f"HTTP {response.status_code}", sent - start)
            async for line in response.aiter_lines():
                timer.line(line, time.perf_counter())
    except httpx.HTTPError as exc:
        return failed(req.kind, req.index, type(exc).__name__, sent - start)
    return timer.record(req.kind, req.index, time.perf_counter(), start)


async def drive(base_url: str, model: str, workload: list[Request]) -> list[dict[str, Any]]:
    """Every request's record, in the workload's order."""
    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    timeout = httpx.Timeout(TIMEOUT_S, connect=60.0)
    url = base_url.rstrip("/") + "/v1/chat/completions"
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        start = time.perf_counter()
        return list(await asyncio.gather(*(_one(client, url, model, r, start) for r in workload)))


def run(base_url: str, model: str, workload: list[Request]) -> list[dict[str, Any]]:
    return asyncio.run(drive(base_url, model, workload))
