"""Serving under load: static vs fcfs vs priority scheduling, Poisson arrivals, long tail.

The fixed-seed mix of bench/serve/workload.py (60% short questions, 20% long documents
to summarize, 20% turns of multi-turn chats sharing their conversation's prefix; fixed
output lengths, EOS ignored) arrives as a Poisson process at ``--rate`` requests/s, or
at each rate of ``--sweep``; ``--quick`` shortens the documents and answers.

``--driver engine`` (the default) sends it straight into our engine (AsyncLLM), one
scheduling mode after another on the same arrivals and an empty prefix cache each time:
static, fcfs, reorder (priority order between steps only), priority (+ the reserve and
predictive preemption), all without quantization, and product (+ int8, the engine's
defaults). ``--driver http`` (our asyncio client) or ``--driver locust`` (locust, the
locustfile bench/serve/locustfile.py, headless) send it over HTTP to the servers of
``--targets`` (r1voice, llama.cpp, vllm: started here on loopback, same model) or to
``--url``. The hand-written client stays the default over HTTP: it needs no locust and
no gevent, and keeps each arrival on its exact time in one asyncio loop.

Reports, per row (mode or server) and rate: P50/P99 TTFT, time per output token and
end-to-end per class, requests/s and output tokens/s, goodput (answered within their
class's TTFT SLO, ``--slo-short``/``--slo-chat``/``--slo-long``), refused and failed
requests (kept in the percentiles as never answered), and for the engine the idle share
and preemptions; ratios against the first row at each rate, where each row's P99 crosses
the SLOs, and a PNG of P99 against offered load.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.serve import engine_driver, table, workload
from bench.serve.records import summarize

DRIVERS = ("engine", "http", "locust")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--rate", type=float, default=None, help="requests/s (default 0.5)")
    parser.add_argument("--sweep", default=None, help="comma-separated rates, e.g. 0.5,1,2")
    parser.add_argument("--requests", type=int, default=None, help="per rate (quick: 20, else 60)")
    parser.add_argument("--driver", choices=DRIVERS, default="engine")
    parser.add_argument("--policies", default=",".join(engine_driver.MODES), help="engine rows")
    parser.add_argument("--targets", default="r1voice", help="http/locust: r1voice,llama.cpp,vllm")
    parser.add_argument("--url", default=None, help="http/locust: a running server instead")
    parser.add_argument("--served-model", default=None, help="--url: the model name to send")
    parser.add_argument("--max-num-seqs", type=int, default=16)
    parser.add_argument("--max-num-batched-tokens", type=int, default=512)
    parser.add_argument("--slo-short", type=float, default=1.0, help="TTFT SLO of short (s)")
    parser.add_argument("--slo-chat", type=float, default=2.0, help="TTFT SLO of chat turns (s)")
    parser.add_argument("--slo-long", type=float, default=10.0, help="TTFT SLO of long (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=None)
    parser.add_argument("--plot", default=None, help="PNG path (default: next to --json)")


def _engine_rows(
    args: argparse.Namespace, rates: list[float], n: int, quick: bool, slo: dict[str, float]
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, Any]]:
    """Each mode at each rate, the modes interleaved within a rate."""
    from engine import AsyncLLM

    modes = [m for m in args.policies.split(",") if m]
    unknown = sorted(set(modes) - set(engine_driver.MODES))
    if unknown:
        raise SystemExit(f"error: unknown --policies {unknown}; use {engine_driver.MODES}")
    limits = {
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        # every request is admitted to the queue: refusals are the server's, not measured here
        "max_waiting_tokens": 10**9,
        "max_waiting_requests": 10**6,
    }
    llms: dict[str, Any] = {}
    for q in sorted({engine_driver.quantization(m) for m in modes}):
        llms[q] = AsyncLLM(args.model, quantization=q, **limits)
        llms[q].warmup_sync()
    results: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in modes}
    try:
        for rate in rates:
            wl = workload.make(n, rate, args.seed, quick)
            ids = engine_driver.prompts(next(iter(llms.values())), wl)
            for mode in modes:
                llm = llms[engine_driver.quantization(mode)]
                records, engine = engine_driver.run_mode(llm, mode, wl, ids)
                results[mode][str(rate)] = {**summarize(records, slo, rate), "engine": engine}
    finally:
        for llm in llms.values():
            llm.close()
    info = {"engine_limits": limits, "scheduling": {m: engine_driver.SCHEDULING[m] for m in modes}}
    return results, info


def _http_rows(
    args: argparse.Namespace, rates: list[float], n: int, quick: bool, slo: dict[str, float]
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, Any]]:
    from bench.serve import endpoints

    targets = ["url"] if args.url else [t for t in args.targets.split(",") if t]
    results: dict[str, dict[str, dict[str, Any]]] = {}
    info: dict[str, Any] = {}
    for target in targets:
        records, info[target] = endpoints.run_target(target, args, rates, n, quick)
        results[target] = {r: summarize(recs, slo, float(r)) for r, recs in records.items()}
    return results, {"servers": info}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.kit.machine import cpu_info

    quick = bool(getattr(args, "quick", False))
    if args.num_threads:
        import torch

        torch.set_num_threads(args.num_threads)
    rates = [float(x) for x in args.sweep.split(",")] if args.sweep else [args.rate or 0.5]
    if any(r <= 0 for r in rates):
        raise SystemExit(f"error: rates must be > 0, got {rates}")
    n = args.requests or (20 if quick else 60)
    slo = {"short": args.slo_short, "chat": args.slo_chat, "long": args.slo_long}
    started = time.perf_counter()
    rows = _engine_rows if args.driver == "engine" else _http_rows
    results, info = rows(args, rates, n, quick, slo)
    base = next(iter(results))
    result: dict[str, Any] = {
        "model": args.model,
        "driver": args.driver,
        "cpu": cpu_info()["cpu_model"],
        "quick": quick,
        "requests_per_rate": n,
        "rates": rates,
        "workload": {"shares": workload.SHARES, "max_tokens": workload.MAX_TOKENS},
        "slo_s": slo,
        "seed": args.seed,
        **info,
        "results": results,
        "baseline": base,
        "ratios": table.ratios(results, base),
        "slo": {name: table.slo_summary(by_rate, slo) for name, by_rate in results.items()},
        "wall_s": round(time.perf_counter() - started, 1),
    }
    result["targets"] = table.targets(result)
    plot = Path(args.plot) if args.plot else None
    if plot is None and args.json:
        plot = Path(args.json).with_suffix(".png")
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        result["plot"] = str(plot) if table.plot(result, plot) else "matplotlib missing"
    return result


def format_table(result: dict[str, Any]) -> str:
    return table.format_rows(result)
