"""`r1voice bench load`: overload, hostile requests beside normal ones, then SIGTERM.

Starts `r1voice serve` (a subprocess, bundled models) and drives it over loopback:
1. unloaded: sequential short chat streams, for the TTFT baseline;
2. overload: Poisson arrivals at `--rate` x `--overload` for `--duration` seconds, a mix
   of streamed chat requests, Realtime text turns and (`--adversarial-share`) hostile
   requests (tiny temperatures, huge integers, a lone surrogate, a 6 MB body, deep
   nesting); then the engine must drain to idle with its KV pool free;
3. burst: `--burst` streamed chat requests at once, each on its own connection: every one
   must get an HTTP status (200 or 429), none a dropped connection;
4. drain: `--drain-turns` HTTP streams and as many WebSocket turns in flight, SIGTERM,
   and how many complete, the exit code and how long the exit took.
Reports counts by status, refusal latency, admitted TTFT against unloaded, normal
requests that failed, hostile requests that got anything but a 4xx, and the targets of
the reliability issue as booleans. Bounded in requests and time; stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import time
from collections import Counter
from typing import Any

import httpx

from bench.kit.server import Server, add_server_arguments, start_server
from bench.kit.stats import percentile
from bench.reliability.traffic import (
    ADVERSARIAL,
    Outcome,
    adversarial,
    chat_stream,
    metric,
    ws_turn,
)
from bench.voice.common import ANSWERED

GREEDY_OK = {"tiny_temperature", "denormal_temperature"}  # these must simply work


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=float, default=1.0, help="sustainable requests/s")
    parser.add_argument("--overload", type=float, default=5.0, help="x the rate")
    parser.add_argument("--duration", type=float, default=None, help="s (quick 15, else 120)")
    parser.add_argument("--ws-share", type=float, default=0.3)
    parser.add_argument("--adversarial-share", type=float, default=0.2)
    parser.add_argument(
        "--drain-turns", type=int, default=None, help="each kind (quick 4, else 10)"
    )
    parser.add_argument("--burst", type=int, default=None, help="quick 128, else 1024")
    parser.add_argument(
        "--max-queue-delay",
        type=float,
        default=None,
        help="the server's R1VOICE_LLM_MAX_QUEUE_DELAY_S",
    )
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> dict[str, Any]:
    duration = args.duration or (15.0 if args.quick else 120.0)
    drain_turns = args.drain_turns or (4 if args.quick else 10)
    delay = (
        {}
        if args.max_queue_delay is None
        else {"R1VOICE_LLM_MAX_QUEUE_DELAY_S": str(args.max_queue_delay)}
    )
    server, ready_s = start_server(args, **delay)
    try:
        result = asyncio.run(_phases(server, args, duration, drain_turns))
    finally:
        info = server.stop()
    result["server"] = {"ready_s": round(ready_s, 2), **info}
    drain = result["drain"]
    drain["exit_code"] = info.get("exit_code")
    result["targets"]["sigterm_exit_0"] = info.get("exit_code") == 0
    result["targets"]["sigterm_all_complete"] = drain["completed"] == drain["in_flight"]
    return result


async def _phases(
    server: Server, args: argparse.Namespace, duration: float, n: int
) -> dict[str, Any]:
    ws_url = server.base.replace("http", "ws") + "/v1/realtime"
    limits = httpx.Limits(max_connections=2000, max_keepalive_connections=100)
    async with httpx.AsyncClient(base_url=server.base, timeout=180, limits=limits) as client:
        baseline = [await chat_stream(client) for _ in range(10)]
        outcomes = await _overload(client, ws_url, args, duration)
        idle = await _wait_idle(client)
        burst = await _burst(server.base, args.burst or (128 if args.quick else 1024))
        await _wait_idle(client)
        drain = await _drain(client, ws_url, server, n)
    result = _report(baseline, outcomes, idle, drain, args, duration)
    result["burst"] = burst
    result["targets"]["burst_every_request_answered"] = burst["without_status"] == 0
    return result


async def _burst(base: str, n: int) -> dict[str, Any]:
    """`n` streamed chat requests at once, each on a connection of its own."""
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as client:
        outcomes = await asyncio.gather(*(chat_stream(client, max_tokens=8) for _ in range(n)))
    missing = [o for o in outcomes if o.status == "transport_error"]  # no HTTP status at all
    return {
        "requests": n,
        "statuses": dict(Counter(str(o.status) for o in outcomes)),
        "without_status": len(missing),
        "errors": [o.error for o in missing][:10],
    }


async def _overload(
    client: httpx.AsyncClient, ws_url: str, args: argparse.Namespace, duration: float
) -> list[Outcome]:
    rng = random.Random(args.seed)
    rate = args.rate * args.overload
    tasks: list[asyncio.Task[Outcome]] = []
    start = time.monotonic()
    at = 0.0
    names = sorted(ADVERSARIAL)
    while at < duration:
        await asyncio.sleep(max(0.0, start + at - time.monotonic()))
        roll = rng.random()
        if roll < args.adversarial_share:
            job = adversarial(client, rng.choice(names))
        elif roll < args.adversarial_share + args.ws_share:
            job = ws_turn(ws_url)
        else:
            job = chat_stream(client)
        tasks.append(asyncio.create_task(job))
        at += rng.expovariate(rate)
    return list(await asyncio.gather(*tasks))


async def _wait_idle(client: httpx.AsyncClient, give_up_s: float = 180.0) -> dict[str, Any]:
    """The engine's state once it is idle, or as it is after `give_up_s`."""
    start = time.monotonic()
    while True:
        page = (await client.get("/metrics")).text
        running = metric(page, "vllm:num_requests_running")
        waiting = metric(page, "vllm:num_requests_waiting")
        usage = metric(page, "vllm:kv_cache_usage_perc")
        if (running, waiting, usage) == (0, 0, 0) or time.monotonic() - start > give_up_s:
            return {
                "running": running,
                "waiting": waiting,
                "kv_cache_usage": usage,
                "after_s": round(time.monotonic() - start, 2),
            }
        await asyncio.sleep(0.5)


async def _drain(client: httpx.AsyncClient, ws_url: str, server: Server, n: int) -> dict[str, Any]:
    jobs = [chat_stream(client, max_tokens=48) for _ in range(n)]
    jobs += [ws_turn(ws_url, max_tokens=48) for _ in range(n)]
    tasks = [asyncio.create_task(job) for job in jobs]
    await asyncio.sleep(1.0)  # all of them admitted and generating
    sent = time.monotonic()
    os.kill(server.proc.pid, signal.SIGTERM)
    outcomes = await asyncio.gather(*tasks)
    # a child process has no event to await: poll it
    while server.proc.poll() is None and time.monotonic() - sent < 120:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    done = [o for o in outcomes if o.status == 200 or o.status in ANSWERED]
    return {
        "in_flight": len(outcomes),
        "completed": len(done),
        "statuses": dict(Counter(str(o.status) for o in outcomes)),
        "exit_after_s": round(time.monotonic() - sent, 2),
    }


def _report(
    baseline: list[Outcome],
    outcomes: list[Outcome],
    idle: dict[str, Any],
    drain: dict[str, Any],
    args: argparse.Namespace,
    duration: float,
) -> dict[str, Any]:
    normal = [o for o in outcomes if not o.kind.startswith("adversarial")]
    hostile = [o for o in outcomes if o.kind.startswith("adversarial")]
    refused = [o for o in normal if o.status in (429, 503, "error:server_busy", "closed:1013")]
    served = [o for o in normal if o.status == 200 or o.status in ANSWERED]
    failed = [o for o in normal if o not in refused and o not in served]
    wrong = [
        (o.kind, o.status, o.error)
        for o in hostile
        if not (o.kind.split(":")[1] in GREEDY_OK and o.status == 200)
        and not (isinstance(o.status, int) and 400 <= o.status < 500)
    ]
    unloaded = percentile([o.ttft_s for o in baseline if o.ttft_s], 99)
    admitted = percentile([o.ttft_s for o in served if o.ttft_s], 99)
    refusal_p99 = percentile([o.seconds for o in refused], 99)
    five_xx = [o for o in outcomes if isinstance(o.status, int) and o.status >= 500]
    return {
        "config": {
            "max_queue_delay_s": args.max_queue_delay,
            "rate": args.rate,
            "overload": args.overload,
            "duration_s": duration,
            "ws_share": args.ws_share,
            "adversarial_share": args.adversarial_share,
        },
        "overload": {
            "requests": len(outcomes),
            "statuses": dict(Counter(f"{o.kind.split(':')[0]}:{o.status}" for o in outcomes)),
            "served": len(served),
            "refused": len(refused),
            "normal_failed": [(o.kind, o.status, o.error) for o in failed][:20],
            "hostile_not_4xx": wrong[:20],
            "5xx": len(five_xx),
            "refusal_s_p50": percentile([o.seconds for o in refused], 50),
            "refusal_s_p99": refusal_p99,
            "refusal_s_p99_http": percentile([o.seconds for o in refused if o.kind == "http"], 99),
            "refusal_s_p99_ws": percentile([o.seconds for o in refused if o.kind == "ws"], 99),
            "ttft_s_p99_unloaded": unloaded,
            "ttft_s_p99_admitted": admitted,
            "ttft_p99_vs_unloaded": round(admitted / unloaded, 2)
            if admitted and unloaded
            else None,
        },
        "idle_after": idle,
        "drain": drain,
        "targets": {
            "no_5xx": not five_xx,
            "no_normal_failed": not failed,
            "hostile_all_refused": not wrong,
            "refusals_within_100ms": refusal_p99 is None or refusal_p99 <= 0.1,
            "admitted_ttft_within_2x": bool(admitted and unloaded and admitted <= 2 * unloaded),
            "engine_idle_after": (idle["running"], idle["waiting"]) == (0, 0),
        },
    }
