"""Serving under load: static vs fcfs vs priority scheduling, Poisson arrivals, long tail.

Drives the engine through AsyncLLM (the interface the app uses) with Poisson arrivals at
``--rate`` requests/s (or each rate of ``--sweep``), a fixed-seed mixed workload: 80%
short prompts (~50 tokens, 32 tokens back) and 20% long ones (~1500-2000 tokens of
context, 64 back); ``--quick`` scales counts and lengths down but keeps the mix. The
same requests (prompts, arrival times) run under each policy on the same loaded model,
one after another, with an empty prefix cache each time (prompts share no prefix).
Outputs have fixed lengths (EOS ignored). Requests name no priority: the engine's
default (short prompts first) is what "priority" tests.

Reports, per policy and rate: TTFT P50/P99 of short and long requests, end-to-end
P50/P99, output tokens/s and requests/s (over the makespan: first arrival to last
finish), goodput (requests/s meeting their TTFT SLO: ``--slo-short`` for short,
``--slo-long`` for long), preemptions, refusals and the engine's idle shares; ratios
against static and fcfs; a PNG of short-request P99 TTFT vs rate.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from pathlib import Path
from typing import Any

POLICIES = ("static", "fcfs", "priority")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--rate", type=float, default=None, help="requests/s (quick: 0.7)")
    parser.add_argument("--sweep", default=None, help="comma-separated rates, e.g. 0.5,1,2")
    parser.add_argument("--requests", type=int, default=None, help="per rate (quick: 20, else 60)")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--max-num-seqs", type=int, default=16)
    parser.add_argument("--max-num-batched-tokens", type=int, default=512)
    parser.add_argument("--slo-short", type=float, default=1.0, help="TTFT SLO of short (s)")
    parser.add_argument("--slo-long", type=float, default=10.0, help="TTFT SLO of long (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=None)
    parser.add_argument("--plot", default=None, help="PNG path (default: next to --json)")


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 3)


def make_workload(n: int, rate: float, quick: bool, seed: int, vocab: int) -> list[dict[str, Any]]:
    """Fixed-seed requests: kind, prompt token ids, max_tokens and arrival offset (s)."""
    rng = random.Random(seed)
    t = 0.0
    out = []
    for i in range(n):
        t += rng.expovariate(rate) if i else 0.0
        long = rng.random() < 0.2
        if quick:
            length = rng.randint(400, 500) if long else rng.randint(40, 60)
            max_tokens = 32 if long else 16
        else:
            length = rng.randint(1500, 2000) if long else rng.randint(40, 60)
            max_tokens = 64 if long else 32
        prompt = [rng.randrange(100, vocab) for _ in range(length)]
        out.append(
            {
                "kind": "long" if long else "short",
                "prompt": prompt,
                "max_tokens": max_tokens,
                "t": t,
            }
        )
    return out


async def _drive(llm: Any, workload: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    from engine import EngineBusyError, SamplingParams

    start = time.perf_counter()
    records: list[dict[str, Any]] = []

    async def one(req: dict[str, Any]) -> None:
        await asyncio.sleep(max(0.0, start + req["t"] - time.perf_counter()))
        sent = time.perf_counter()
        params = SamplingParams(max_tokens=req["max_tokens"], temperature=0.0, ignore_eos=True)
        first = None
        tokens = 0
        try:
            async for delta in llm.stream(req["prompt"], params):
                if first is None and delta.token_ids:
                    first = time.perf_counter()
                tokens += len(delta.token_ids)
        except EngineBusyError:
            records.append({"kind": req["kind"], "refused": True})
            return
        end = time.perf_counter()
        records.append(
            {
                "kind": req["kind"],
                "refused": False,
                "ttft": (first or end) - sent,
                "e2e": end - sent,
                "tokens": tokens,
                "end": end - start,
            }
        )

    await asyncio.gather(*(one(r) for r in workload))
    makespan = max((r["end"] for r in records if not r["refused"]), default=0.0)
    return records, makespan


def _summarize(
    records: list[dict[str, Any]], makespan: float, stats: dict[str, Any], args: Any
) -> dict[str, Any]:
    done = [r for r in records if not r["refused"]]
    slo = {"short": args.slo_short, "long": args.slo_long}
    out: dict[str, Any] = {}
    for kind in ("short", "long"):
        ttft = [r["ttft"] for r in done if r["kind"] == kind]
        out[f"ttft_{kind}_p50_s"] = _pct(ttft, 50)
        out[f"ttft_{kind}_p99_s"] = _pct(ttft, 99)
        out[f"{kind}_requests"] = len(ttft)
    e2e = [r["e2e"] for r in done]
    good = sum(1 for r in done if r["ttft"] <= slo[r["kind"]])
    good_short = sum(1 for r in done if r["kind"] == "short" and r["ttft"] <= args.slo_short)
    out.update(
        e2e_p50_s=_pct(e2e, 50),
        e2e_p99_s=_pct(e2e, 99),
        makespan_s=round(makespan, 2),
        output_tokens_per_s=round(sum(r["tokens"] for r in done) / makespan, 2),
        requests_per_s=round(len(done) / makespan, 3),
        goodput_requests_per_s=round(good / makespan, 3),
        goodput_short_requests_per_s=round(good_short / makespan, 3),
        refused=len(records) - len(done),
        preemptions=stats["num_preemptions"],
        busy_share=round(stats["busy_share"], 3),
        idle_waiting_share=round(stats["idle_waiting_share"], 3),
        idle_empty_share=round(stats["idle_empty_share"], 3),
        peak_kv_blocks_used=stats["peak_kv_blocks_used"],
    )
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _plot(results: dict[str, dict[str, dict[str, Any]]], rates: list[float], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy, by_rate in results.items():
        ys = [by_rate[str(r)]["ttft_short_p99_s"] for r in rates]
        ax.plot(rates, ys, marker="o", label=policy)
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("short requests: P99 TTFT (s)")
    ax.set_yscale("log")
    ax.set_title("r1voice engine: P99 TTFT of short requests")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from engine import AsyncLLM

    quick = bool(getattr(args, "quick", False))
    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    if args.sweep:
        rates = [float(x) for x in args.sweep.split(",")]
    else:
        rates = [args.rate or (0.7 if quick else 0.5)]
    n = args.requests or (20 if quick else 60)
    policies = [p for p in args.policies.split(",") if p]
    llm = AsyncLLM(
        args.model,
        dtype="float32",
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        # Backpressure is not what this measures: every request is admitted to the queue.
        max_waiting_tokens=10**9,
        max_waiting_requests=10**6,
    )
    llm.warmup_sync()
    vocab = int(llm.engine.model_config.vocab_size)
    results: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in policies}
    started = time.perf_counter()
    for rate in rates:
        workload = make_workload(n, rate, quick, args.seed, vocab)
        for policy in policies:
            asyncio.run(llm.free_all())  # empty prefix cache: each policy starts cold
            asyncio.run(llm.set_scheduling(scheduling_policy=policy))
            llm.reset_stats()
            records, makespan = asyncio.run(_drive(llm, workload))
            summary = _summarize(records, makespan, llm.stats().asdict(), args)
            results[policy][str(rate)] = summary
    llm.close()
    ratios: dict[str, dict[str, Any]] = {}
    if {"static", "fcfs", "priority"} <= set(policies):
        for rate in rates:
            pr, st, fc = (results[p][str(rate)] for p in ("priority", "static", "fcfs"))
            ratios[str(rate)] = {
                "short_p99_ttft_priority_vs_static": _ratio(
                    pr["ttft_short_p99_s"], st["ttft_short_p99_s"]
                ),
                "short_p99_ttft_priority_vs_fcfs": _ratio(
                    pr["ttft_short_p99_s"], fc["ttft_short_p99_s"]
                ),
                "throughput_priority_vs_static": _ratio(pr["requests_per_s"], st["requests_per_s"]),
                "output_tokens_priority_vs_static": _ratio(
                    pr["output_tokens_per_s"], st["output_tokens_per_s"]
                ),
                "goodput_priority_vs_static": _ratio(
                    pr["goodput_requests_per_s"], st["goodput_requests_per_s"]
                ),
            }
    result: dict[str, Any] = {
        "model": args.model,
        "dtype": "float32",
        "quantization": getattr(llm.engine.config, "quantization", "none"),
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "quick": quick,
        "requests_per_rate": n,
        "rates": rates,
        "workload": (
            "80% short (40-60 tokens, 16 back) / 20% long (400-500 tokens, 32 back)"
            if quick
            else "80% short (40-60 tokens, 32 back) / 20% long (1500-2000 tokens, 64 back)"
        ),
        "engine": {
            "max_num_seqs": args.max_num_seqs,
            "max_num_batched_tokens": args.max_num_batched_tokens,
            **{
                k: getattr(llm.engine.config, k)
                for k in ("static_batch_timeout_s", "preemption_reserve", "priority_aging_s")
            },
        },
        "slo_s": {"short": args.slo_short, "long": args.slo_long},
        "seed": args.seed,
        "results": results,
        "ratios": ratios,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    plot = Path(args.plot) if args.plot else None
    if plot is None and args.json:
        plot = Path(args.json).with_suffix(".png")
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        result["plot"] = str(plot) if _plot(results, rates, plot) else "matplotlib missing"
    return result
