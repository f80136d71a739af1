"""Tools that take seconds: first spoken word and answer time, blocking vs background.

Starts a real server (`python -m app.cli serve`, Qwen2.5-Coder-0.5B: the small model
that calls tools best) and, in this process, a real MCP server over streamable HTTP
whose `lookup` tools answer after 0.1, 2 and 6 s. Each trial is a new session offered
one of them (`tool_choice` names it, so every trial makes the call) and a typed question
answered in audio, with the call either waited for (`blocking`: the entry's
`r1voice.background_after_s` is 0) or moved to the background after 1 s (`background`:
the answer says "Let me check that." and the result is answered when it comes). Per
trial: the time from `response.create` to the first audio (the first spoken word) and
to the first audio after `response.mcp_call.completed` (the answer with the result).
A plain question (no tool) gives the first-word time to compare with. Times are
reported, never asserted; the issue's target is a first word within the plain
question's whatever the tool's latency.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LATENCIES = (0.1, 2.0, 6.0)
MODES = ("blocking", "background")
MODEL = "qwen2.5-coder-0.5b-instruct"
QUESTION = "When does my package to Oslo arrive? Look it up."


def _tool_name(latency: float) -> str:
    return f"lookup_{str(latency).replace('.', '_')}s"


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """Serve the MCP app with uvicorn on a free loopback port, in a thread of this process."""
    import socket
    import threading
    import time

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _mcp_app() -> Any:
    import asyncio

    from mcp.server.mcpserver import MCPServer

    def tool(latency: float) -> Any:
        async def lookup(city: str) -> str:
            await asyncio.sleep(latency)
            return f"The package to {city} arrives on Tuesday."

        return lookup

    server = MCPServer("bench-tools")
    for latency in LATENCIES:
        server.add_tool(tool(latency), name=_tool_name(latency), description="Track a package.")
    return server.streamable_http_app()


async def _trial(url: str, mcp_url: str, latency: float | None, mode: str, wait_s: float) -> dict:
    import json
    import time

    import websockets

    trial: dict[str, Any] = {"latency_s": latency, "mode": mode}
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()  # session.created
        session: dict[str, Any] = {"type": "realtime", "output_modalities": ["audio"]}
        response: dict[str, Any] = {"output_modalities": ["audio"], "max_output_tokens": 48}
        if latency is not None:
            name = _tool_name(latency)
            after = 0 if mode == "blocking" else 1.0
            session["tools"] = [
                {
                    "type": "mcp",
                    "server_label": "parcels",
                    "server_url": mcp_url,
                    "allowed_tools": [name],
                    "require_approval": "never",
                    "r1voice": {"background_after_s": after},
                }
            ]
            response["tool_choice"] = {"type": "function", "name": name}
        await ws.send(json.dumps({"type": "session.update", "session": session}))
        content = [{"type": "input_text", "text": QUESTION}]
        item = {"type": "message", "role": "user", "content": content}
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        t0 = time.monotonic()
        await ws.send(json.dumps({"type": "response.create", "response": response}))
        completed_at = None
        answer_words = False  # words written after the call was done (not the ack's)
        responses_done = 0
        while time.monotonic() - t0 < wait_s:
            event = json.loads(await ws.recv())
            kind, now = event["type"], time.monotonic() - t0
            if kind == "response.output_audio.delta":
                trial.setdefault("first_word_s", round(now, 3))
                if answer_words:
                    trial.setdefault("answer_s", round(now, 3))
            elif kind == "response.output_audio_transcript.delta":
                answer_words = answer_words or completed_at is not None
            elif kind == "response.mcp_call.completed":
                completed_at = completed_at or now
                trial.setdefault("call_done_s", round(now, 3))
            elif kind == "response.mcp_call.failed":
                trial["failed"] = True
            elif kind == "response.output_audio_transcript.done":
                trial.setdefault("said", []).append(event["transcript"])
            elif kind == "response.done":
                responses_done += 1
                called = any(o["type"] == "mcp_call" for o in event["response"]["output"])
                trial["called"] = trial.get("called", False) or called
                if latency is None or "answer_s" in trial or trial.get("failed"):
                    break
                if responses_done == 1 and not called:
                    break  # the model did not call the tool: nothing more comes
    return trial


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trials", type=int, default=None, help="per latency and mode (5, quick 2)"
    )
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--trial-timeout", type=float, default=90.0, help="seconds per trial")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio
    import os
    import time

    from bench.kit import machine
    from bench.kit.log import log
    from bench.kit.server import Server
    from bench.kit.stats import percentile

    quick = bool(getattr(args, "quick", False))
    trials = args.trials if args.trials is not None else (2 if quick else 5)
    server = Server(
        argparse.Namespace(
            port=args.port, llm_backend=None, llm_model=MODEL, server_log=args.server_log
        )
    )
    server.env["R1VOICE_MCP_ALLOWED_URLS"] = "http://127.0.0.1:"
    result: dict[str, Any] = {
        "benchmark": "tools",
        "quick": quick,
        "trials": trials,
        "model": MODEL,
        "machine": machine.describe(),
        "load_before": os.getloadavg(),
    }
    details: list[dict[str, Any]] = []
    t0 = time.monotonic()
    with _serving(_mcp_app()) as base:
        try:
            server.start()
            result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
            url = f"ws://127.0.0.1:{server.port}/v1/realtime"
            cases: list[tuple[float | None, str]] = [(None, "plain")]
            cases += [(latency, mode) for latency in LATENCIES for mode in MODES]
            for n in range(trials):  # interleaved: the machine's load falls on every case
                for latency, mode in cases:
                    trial = asyncio.run(
                        _trial(url, f"{base}/mcp", latency, mode, args.trial_timeout)
                    )
                    log(f"{n + 1}/{trials} {mode} {latency}: {trial}", bench="tools")
                    details.append(trial)
        finally:
            result["server"] = server.stop()
    summary: dict[str, Any] = {}
    for trial in details:
        key = "plain" if trial["latency_s"] is None else f"{trial['mode']} {trial['latency_s']}s"
        summary.setdefault(key, []).append(trial)
    result["cases"] = {
        key: {
            "called": sum(bool(t.get("called")) for t in ts),
            "first_word_s_median": percentile(
                [t["first_word_s"] for t in ts if "first_word_s" in t], 50
            ),
            "first_word_s_p95": percentile(
                [t["first_word_s"] for t in ts if "first_word_s" in t], 95
            ),
            "answer_s_median": percentile([t["answer_s"] for t in ts if "answer_s" in t], 50),
        }
        for key, ts in summary.items()
    }
    result["details"] = details
    result["load_after"] = os.getloadavg()
    result["wall_s"] = round(time.monotonic() - t0, 1)
    return result


def format_table(result: dict[str, Any]) -> str:
    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [
        f"{'case':<18} {'called':>7} {'first word p50':>15} {'p95':>6} {'answer p50':>11}",
    ]
    for key, case in result["cases"].items():
        lines.append(
            f"{key:<18} {case['called']:>3}/{result['trials']:<3} "
            f"{cell(case['first_word_s_median']):>15} {cell(case['first_word_s_p95']):>6} "
            f"{cell(case['answer_s_median']):>11}"
        )
    lines.append(f"load {result['load_before']} -> {result['load_after']}")
    return "\n".join(lines)
