"""Cold start: `r1voice serve` from process start to ready and to its first answer.

Each round starts the server as a user does (`python -m app.cli serve`, the model from
the prepared cache) and times, from the process's start, its first HTTP answer, the
first 200 of /v2/health/ready (models loaded and warmed up) and its first answered
chat completion; the server's own timeline (each model's load and warm-up, from its
"ready after" log line) comes with it. With ``--baseline-root`` (another source tree,
e.g. `git archive <commit> | tar -x -C DIR`) the same command runs from that tree in
alternating rounds, so machine load hits both; the best and median of each are given.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
from pathlib import Path
from typing import Any

from bench.kit.log import log

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = re.compile(r"ready after ([\d.]+) s \((\{.*\})\)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="the LLM")
    parser.add_argument("--rounds", type=int, default=None, help="starts per tree (quick: 2)")
    parser.add_argument(
        "--baseline-root",
        default=None,
        help="another source tree to start the same way, rounds interleaved",
    )
    parser.add_argument(
        "--baseline-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of the baseline's server only (e.g. its own R1VOICE_CACHE)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to ready")


def _one_start(root: Path, model: str, timeout: float, extra: dict[str, str]) -> dict[str, Any]:
    """One server start from ``root``: seconds to listening, ready and first answer."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    import time
    import urllib.error
    import urllib.request

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "R1VOICE_LLM_MODEL": model, "PYTHONPATH": str(root), **extra}
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
    result: dict[str, Any] = {"root": str(root), "load_avg": list(os.getloadavg())}
    with tempfile.TemporaryFile() as output:
        started = time.monotonic()
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=output, stderr=output)
        try:
            while "ready_s" not in result:
                if proc.poll() is not None or time.monotonic() - started > timeout:
                    output.seek(0)
                    tail = output.read().decode("utf-8", "replace")[-3000:]
                    raise RuntimeError(f"the server from {root} was not ready:\n{tail}")
                try:
                    with urllib.request.urlopen(base + "/v2/health/ready", timeout=2) as reply:
                        reply.read()
                        result["ready_s"] = round(time.monotonic() - started, 3)
                except urllib.error.HTTPError:  # 503: listening, still loading
                    result.setdefault("listening_s", round(time.monotonic() - started, 3))
                except OSError:
                    pass
                time.sleep(0.05)
            result.setdefault("listening_s", result["ready_s"])
            body = {"model": model, "messages": [{"role": "user", "content": "Say hello."}]}
            request = urllib.request.Request(
                base + "/v1/chat/completions",
                data=json.dumps(body).encode(),
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=120) as reply:
                answer = json.loads(reply.read())
            result["first_answer_s"] = round(time.monotonic() - started, 3)
            result["answer"] = answer["choices"][0]["message"]["content"]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        output.seek(0)
        result.update(server_timeline(output.read().decode("utf-8", "replace")))
    return result


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_timeline(log_text: str) -> dict[str, Any]:
    """The server's own "ready after N s ({timings})" line: seconds from its state's
    creation (after the imports) to ready, and each part's seconds."""
    match = READY_LINE.search(log_text)
    if match is None:
        return {}
    return {"server_ready_after_s": float(match[1]), "timeline": ast.literal_eval(match[2])}


def summarize(starts: list[dict[str, Any]]) -> dict[str, Any]:
    """Best and median of each figure over ``starts``."""
    out: dict[str, Any] = {"starts": len(starts)}
    for key in ("listening_s", "ready_s", "first_answer_s", "server_ready_after_s"):
        values = [s[key] for s in starts if key in s]
        if values:
            out[key] = {"best": min(values), "median": round(statistics.median(values), 3)}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.kit.machine import describe

    rounds = args.rounds or (2 if getattr(args, "quick", False) else 3)
    trees = {"current": ROOT}
    envs: dict[str, dict[str, str]] = {"current": {}}
    if args.baseline_root:
        baseline = Path(args.baseline_root).resolve()
        if not (baseline / "app" / "cli.py").is_file():
            raise SystemExit(f"--baseline-root {baseline} is not a source tree (no app/cli.py)")
        trees = {"baseline": baseline, **trees}
        bad = [e for e in args.baseline_env if "=" not in e]
        if bad:
            raise SystemExit(f"--baseline-env {bad[0]!r}: give KEY=VALUE")
        envs["baseline"] = dict(e.split("=", 1) for e in args.baseline_env)
    starts: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for i in range(rounds):
        for name, root in trees.items():
            start = _one_start(root, args.model, args.timeout, envs[name])
            log(
                f"round {i + 1} {name}: ready {start['ready_s']} s, first answer "
                f"{start['first_answer_s']} s, load {start['load_avg'][0]:.2f}",
                "cold-start",
            )
            starts[name].append(start)
    return {
        "model": args.model,
        "rounds": rounds,
        "machine": describe(),
        "summary": {name: summarize(s) for name, s in starts.items()},
        "starts": starts,
    }


def format_table(result: dict[str, Any]) -> str:
    lines = [
        f"cold start of {result['model']}, best / median of {result['rounds']} starts "
        f"({result['machine'].get('cpu_model')}):",
        f"{'tree':<10} {'listening':>13} {'ready':>13} {'first answer':>13}",
    ]
    for name, s in result["summary"].items():
        cells = [
            f"{s[k]['best']:>6.2f}/{s[k]['median']:<6.2f}" if k in s else f"{'-':>13}"
            for k in ("listening_s", "ready_s", "first_answer_s")
        ]
        lines.append(f"{name:<10} " + " ".join(cells))
    for name, starts in result["starts"].items():
        best = min(starts, key=lambda s: s["ready_s"])
        lines.append(f"{name} best start's timeline: {best.get('timeline')}")
    return "\n".join(lines)
