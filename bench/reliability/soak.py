"""`r1voice bench soak`: many Realtime sessions that misbehave, then a leak check.

Starts `r1voice serve` (a subprocess, bundled models) and runs `--sessions` sessions,
`--concurrency` at a time. Each one, at random: completes a text turn, cancels its
answer mid-way (`response.cancel`), vanishes mid-answer (the socket closed with no
goodbye), or stops reading while its answer streams. Afterwards the server must be
back where it started: no engine request left, the KV pool free, no session open,
thread count unchanged and RSS within 10% of what it was after a warm-up round.

Then `--hostile-rounds` rounds, one after another, of `--hostile-clients` raw clients
that send the largest `session.update` a session may have, as fast as the server reads,
and never read (bench/reliability/never_reading.py): the server's RSS while they run, how long it
takes to close them, and its RSS once they are gone, against before the first round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections import Counter
from typing import Any

import httpx
import websockets

from bench.kit.server import Server, add_server_arguments, start_server
from bench.reliability.never_reading import open_raw, send_until_stuck
from bench.reliability.traffic import metric, process_info, ws_turn

BEHAVIOURS = ("complete", "cancel", "vanish", "stop_reading")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sessions", type=int, default=None, help="quick 100, else 1000")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--hostile-rounds", type=int, default=None, help="quick 1, else 3")
    parser.add_argument("--hostile-clients", type=int, default=2)
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> dict[str, Any]:
    sessions = args.sessions or (100 if args.quick else 1000)
    server, _ready_s = start_server(args)
    try:
        result = asyncio.run(_soak(server, args, sessions))
    finally:
        info = server.stop()
    return {**result, "server": info}


async def stop_reading(url: str) -> str:
    """Ask for a long answer, then never read: the server must give up on this peer."""
    async with websockets.connect(url, max_size=None, max_queue=1) as ws:
        await ws.recv()
        session = {"type": "realtime", "output_modalities": ["text"]}
        await ws.send(json.dumps({"type": "session.update", "session": session}))
        item = {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Tell me a long story."}]}  # fmt: skip
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        await ws.send(json.dumps({"type": "response.create",
                                  "response": {"max_output_tokens": 96}}))  # fmt: skip
        await asyncio.sleep(3.0)  # not reading
    return "stopped_reading"


async def _one(url: str, behaviour: str, rng: random.Random) -> str:
    if behaviour == "stop_reading":
        return await stop_reading(url)
    if behaviour == "cancel":
        outcome = await ws_turn(url, max_tokens=64, cancel_after_s=rng.uniform(0, 0.3))
    elif behaviour == "vanish":
        outcome = await ws_turn(url, max_tokens=64, leave_after_s=rng.uniform(0, 0.3))
    else:
        outcome = await ws_turn(url, max_tokens=16)
    return str(outcome.status)


async def _round(url: str, n: int, concurrency: int, rng: random.Random) -> Counter[str]:
    gate = asyncio.Semaphore(concurrency)
    plan = [rng.choice(BEHAVIOURS) for _ in range(n)]

    async def session(behaviour: str) -> str:
        async with gate:
            try:
                return f"{behaviour}:{await _one(url, behaviour, rng)}"
            except Exception as exc:  # the client side failing is a result too
                return f"{behaviour}:client_{type(exc).__name__}"

    return Counter(await asyncio.gather(*(session(b) for b in plan)))


async def _settled(client: httpx.AsyncClient, give_up_s: float = 60.0) -> dict[str, Any]:
    """The server's load once it has settled, or as it is after `give_up_s`."""
    start = time.monotonic()
    while True:
        page = (await client.get("/metrics")).text
        state = {
            "engine_running": metric(page, "vllm:num_requests_running"),
            "engine_waiting": metric(page, "vllm:num_requests_waiting"),
            "kv_cache_usage": metric(page, "vllm:kv_cache_usage_perc"),
            "open_sessions": metric(page, "r1voice_active_sessions"),
        }
        if all(v == 0 for v in state.values()) or time.monotonic() - start > give_up_s:
            return {**state, "settled_after_s": round(time.monotonic() - start, 2)}
        await asyncio.sleep(0.25)


async def _soak(server: Server, args: argparse.Namespace, sessions: int) -> dict[str, Any]:
    url = server.base.replace("http", "ws") + "/v1/realtime"
    rng = random.Random(args.seed)
    async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
        await _round(url, args.concurrency, args.concurrency, rng)  # warm-up: pools, caches
        await _settled(client)
        before = process_info(server.proc.pid)
        started = time.monotonic()
        outcomes = await _round(url, sessions, args.concurrency, rng)
        elapsed = time.monotonic() - started
        after_state = await _settled(client)
        after = process_info(server.proc.pid)
        rounds = (
            args.hostile_rounds if args.hostile_rounds is not None else (1 if args.quick else 3)
        )
        hostile = await _hostile(server, client, rounds, args.hostile_clients)
    growth = (after["rss_kib"] - before["rss_kib"]) / max(1, before["rss_kib"])
    return {
        "never_reading": hostile,
        "config": {"sessions": sessions, "concurrency": args.concurrency, "seed": args.seed},
        "outcomes": dict(sorted(outcomes.items())),
        "seconds": round(elapsed, 1),
        "after": after_state,
        "process": {"before": before, "after": after, "rss_growth": round(growth, 4)},
        "targets": {
            "engine_idle": after_state["engine_running"] == 0
            and after_state["engine_waiting"] == 0,
            "kv_pool_free": after_state["kv_cache_usage"] == 0,
            "no_session_left": after_state["open_sessions"] == 0,
            "threads_unchanged": after["threads"] <= before["threads"],
            "rss_growth_under_10pct": growth < 0.10,
            "no_client_failures": not any("client_" in k for k in outcomes),
            "never_reading_under_300mb": hostile["peak_growth_mb"] < 300,
            "never_reading_closed_within_15s": all(
                r["closed_after_s"] is not None and r["closed_after_s"] <= 15
                for r in hostile["rounds"]
            ),
            "rss_back_within_10pct": hostile["rss_growth_after"] < 0.10,
        },
    }


async def _hostile(
    server: Server, client: httpx.AsyncClient, rounds: int, clients: int
) -> dict[str, Any]:
    """Rounds of raw clients that never read; RSS and time to close per round."""
    host, port = server.base.removeprefix("http://").rsplit(":", 1)
    pid = server.proc.pid
    start_rss = process_info(pid)["rss_kib"]
    results: list[dict[str, Any]] = []
    for _ in range(rounds):
        peak = process_info(pid)["rss_kib"]
        writers = [await open_raw(host, int(port)) for _ in range(clients)]
        began = time.monotonic()
        sends = [asyncio.create_task(send_until_stuck(w, 5000, 30.0)) for w in writers]
        closed_after = None
        while time.monotonic() - began < 60:
            peak = max(peak, process_info(pid)["rss_kib"])
            page = (await client.get("/metrics")).text
            if closed_after is None and metric(page, "r1voice_active_sessions") == 0:
                closed_after = round(time.monotonic() - began, 1)
            if closed_after is not None and all(t.done() for t in sends):
                break
            await asyncio.sleep(0.25)
        sent = [t.result() if t.done() else {"ended": "still_sending"} for t in sends]
        for task in sends:
            task.cancel()
        for writer in writers:
            writer.transport.abort()
        results.append(
            {
                "closed_after_s": closed_after,
                "peak_growth_mb": round((peak - start_rss) / 1024, 1),
                "frames_sent": [s.get("frames_sent") for s in sent],
            }
        )
    await _settled(client)
    await asyncio.sleep(7.0)  # the server trims its heap once closed sessions settle
    end_rss = process_info(pid)["rss_kib"]
    return {
        "rounds": results,
        "rss_before_mb": round(start_rss / 1024, 1),
        "rss_after_mb": round(end_rss / 1024, 1),
        "peak_growth_mb": max(r["peak_growth_mb"] for r in results) if results else 0.0,
        "rss_growth_after": round((end_rss - start_rss) / max(1, start_rss), 4),
    }
