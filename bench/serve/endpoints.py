"""`r1voice bench serve --driver http|locust`: the serve mix over HTTP against servers,
each started on loopback with the same model (bench/serve/servers.py) or one already
running (`--url`), the same arrivals for each, every rate of the sweep."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.serve import http_driver, workload
from bench.serve.records import failed
from bench.serve.servers import ROOT, Server, ServerFailed

LOCUSTFILE = ROOT / "bench" / "serve" / "locustfile.py"


def locust_records(
    base_url: str, model: str, rate: float, n: int, seed: int, quick: bool
) -> list[dict[str, Any]]:
    """The locustfile run headless against `base_url`; its records, read back."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
        command += ["-u", "1", "-r", "1", "--host", base_url, "--only-summary"]
        command += ["--rate", str(rate), "--requests", str(n), "--seed", str(seed)]
        command += ["--model", model, "--records", str(path), "--loglevel", "WARNING"]
        command += [] if quick else ["--full"]
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=3600)
        if not path.exists():
            raise RuntimeError(f"locust wrote no records (exit {done.returncode}):\n{done.stderr}")
        return [json.loads(line) for line in path.read_text().splitlines()]


def drive(
    driver: str, base_url: str, model: str, rate: float, n: int, seed: int, quick: bool
) -> list[dict[str, Any]]:
    if driver == "locust":
        return locust_records(base_url, model, rate, n, seed, quick)
    return http_driver.run(base_url, model, workload.make(n, rate, seed, quick))


def rate_seed(seed: int, i: int) -> int:
    """The i-th rate's seed: a server keeps its prefix cache from one rate to the next,
    so each rate sends documents and chats of its own (the same for every server)."""
    return seed + 1000 * i


def warm(base_url: str, model: str) -> None:
    """One request of each class first: compilation and kernel choice happen outside."""
    http_driver.run(base_url, model, workload.make(6, 50.0, seed=999, quick=True))


def run_target(
    name: str, args: Any, rates: list[float], n: int, quick: bool
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Every rate's records for one target, and what its start took or why it failed."""
    records: dict[str, list[dict[str, Any]]] = {}
    if name == "url":
        base_url, model, info = args.url, args.served_model or "r1voice", {"url": args.url}
        server = None
    else:
        server = Server(name, args.model, args.num_threads or 2)
        try:
            info = {"start_s": server.start()}
        except ServerFailed as exc:  # reported, every request of it failed
            info = {"failed_to_start": str(exc)[-2000:]}
            for i, rate in enumerate(rates):
                wl = workload.make(n, rate, rate_seed(args.seed, i), quick)
                records[str(rate)] = [
                    failed(r.kind, r.index, "server did not start", r.t) for r in wl
                ]
            return records, info
        base_url, model = server.base_url, server.served_model
    try:
        warm(base_url, model)
        for i, rate in enumerate(rates):
            started = time.perf_counter()
            seed = rate_seed(args.seed, i)
            records[str(rate)] = drive(args.driver, base_url, model, rate, n, seed, quick)
            print(f"  {name} @ {rate}/s: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    return records, info
