"""Prefix KV reuse: no cache vs prefix cache (FCFS) vs + cache-aware order vs + clustering.

Four fixed-seed workloads with Poisson arrivals, each run under four engine settings
on the same loaded model (SmolLM2-135M, float32, CPU), one after another, each
starting with an empty cache:

1. ``sessions``: chat sessions sharing one ~500-token system prompt, 3-5 turns each;
   every turn resends the whole history (the model's own previous answers included).
2. ``documents``: templated questions about a handful of shared ~800-token documents,
   arriving interleaved in random order.
3. ``hot_documents``: questions about more documents than the KV pool holds (about a
   third of them fit), interleaved, with Zipf-like popularity (document i is asked
   with weight 1/(i+1)): memory pressure, where eviction decides what is reused.
4. ``unrelated``: prompts that share nothing but the chat template's first tokens.

Settings: ``no_cache`` (enable_prefix_caching=False), ``cache_fcfs`` (prefix cache,
plain FCFS order), ``cache_aware`` (+ longest-cached-prefix-first picks, holding back
requests whose prefix is being computed), ``clustering`` (+ prompt clustering by a
MinHash of token 4-grams on a worker thread: cluster-aware eviction and grouped
admissions), ``clustering_minilm`` (the same with all-MiniLM-L6-v2 embeddings). All use the "fcfs" policy so that ordering is
the only difference. The KV pool is deliberately small (``--num-kv-blocks``) so that
the documents do not all stay cached at once: without pressure every order hits.
Reports hit rate, prefill tokens computed, TTFT P50/P99, throughput, peak KV blocks,
clustering cost per request; a PNG of prefill tokens computed per workload/setting.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from pathlib import Path
from typing import Any

from bench.engine.prefix_workloads import Run, make_workloads, run_independent, run_sessions

SETTINGS: dict[str, dict[str, Any]] = {
    "no_cache": dict(
        enable_prefix_caching=False, cache_aware_scheduling=False, semantic_clustering=False
    ),
    "cache_fcfs": dict(
        enable_prefix_caching=True, cache_aware_scheduling=False, semantic_clustering=False
    ),
    "cache_aware": dict(
        enable_prefix_caching=True, cache_aware_scheduling=True, semantic_clustering=False
    ),
    "clustering": dict(
        enable_prefix_caching=True,
        cache_aware_scheduling=True,
        semantic_clustering=True,
        cluster_signature="minhash",
        cluster_min_queue=1,
    ),
    "clustering_minilm": dict(
        enable_prefix_caching=True,
        cache_aware_scheduling=True,
        semantic_clustering=True,
        cluster_signature="minilm",
        cluster_min_queue=4,  # ~85 ms an embedding: only when a queue has formed
    ),
}
CLUSTERED = ("clustering", "clustering_minilm")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--rates",
        default="1,4,1,2",
        help="requests/s of sessions (new turns), documents, hot_documents, unrelated: "
        "documents arrive faster than they are served, so a queue forms and ordering "
        "matters; hot_documents about as fast as served, so eviction decides",
    )
    parser.add_argument(
        "--num-kv-blocks", type=int, default=None, help="KV pool in blocks (quick: 64, else 160)"
    )
    parser.add_argument("--max-tokens", type=int, default=None, help="per answer (quick: 8)")
    parser.add_argument("--workloads", default="sessions,documents,hot_documents,unrelated")
    parser.add_argument("--settings", default="no_cache,cache_fcfs,cache_aware,clustering")
    parser.add_argument("--seed", type=int, default=0)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 3)


def _plot(results: dict[str, dict[str, dict[str, Any]]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    workloads = list(results)
    settings = list(next(iter(results.values())))
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(settings)
    for j, setting in enumerate(settings):
        ys = [results[w][setting]["prefill_tokens_computed"] for w in workloads]
        ax.bar([i + j * width for i in range(len(workloads))], ys, width, label=setting)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(workloads))], workloads)
    ax.set_ylabel("prefill tokens computed")
    ax.set_title("r1voice engine: prefix KV reuse")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    from engine import AsyncLLM

    quick = bool(getattr(args, "quick", False))
    rate_list = [float(x) for x in args.rates.split(",")]
    names = ["sessions", "documents", "hot_documents", "unrelated"]
    if len(rate_list) != len(names):
        raise SystemExit(f"--rates needs {len(names)} values ({', '.join(names)})")
    rates = dict(zip(names, rate_list, strict=True))
    max_tokens = args.max_tokens or (8 if quick else 24)
    num_kv_blocks = args.num_kv_blocks or (64 if quick else 160)
    llm = AsyncLLM(
        args.model,
        dtype="float32",
        num_kv_blocks=num_kv_blocks,
        max_num_seqs=16,
        max_num_batched_tokens=512,
        scheduling_policy="fcfs",
        max_waiting_tokens=10**9,
        max_waiting_requests=10**6,
    )
    llm.warmup_sync()
    tok = llm.tokenizer

    def chat(messages: list[dict[str, str]]) -> list[int]:
        enc = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(enc["input_ids"] if hasattr(enc, "keys") else enc)

    specs = make_workloads(quick, args.seed, tok, rates["sessions"], num_kv_blocks)
    names = [w for w in args.workloads.split(",") if w]
    settings = [s for s in args.settings.split(",") if s]
    results: dict[str, dict[str, dict[str, Any]]] = {w: {} for w in names}
    started = time.perf_counter()
    for workload in names:
        for setting in settings:
            asyncio.run(llm.free_all())
            asyncio.run(llm.set_scheduling(**SETTINGS[setting]))
            llm.reset_stats()
            r = Run(llm, chat, max_tokens)
            rng = random.Random(args.seed + 1)
            if workload == "sessions":
                asyncio.run(run_sessions(r, rng, specs["sessions"]))
            else:
                asyncio.run(run_independent(r, rng, specs[workload], rates[workload]))
            makespan = time.perf_counter() - r.start
            st = llm.stats().asdict()
            row = {
                "requests": len(r.ttft),
                "prefix_cache_hit_rate": round(st["prefix_cache_hit_rate"], 3),
                "prompt_tokens": st["prompt_tokens"],
                "prefill_tokens_computed": st["prefill_tokens_computed"],
                "prefill_tokens_saved": st["prefix_cache_hits"],
                "ttft_p50_s": _pct(r.ttft, 50),
                "ttft_p99_s": _pct(r.ttft, 99),
                "makespan_s": round(makespan, 2),
                "output_tokens_per_s": round(r.tokens / makespan, 2),
                "requests_per_s": round(len(r.ttft) / makespan, 3),
                "peak_kv_blocks_used": st["peak_kv_blocks_used"],
                "preemptions": st["num_preemptions"],
            }
            if setting in CLUSTERED:
                row.update(
                    {
                        k: round(st[k], 2) if isinstance(st[k], float) else st[k]
                        for k in (
                            "num_clusters",
                            "largest_cluster",
                            "mean_cluster_size",
                            "embedded_requests",
                            "embed_ms_per_request",
                        )
                    }
                )
                row["retained_evictions"] = llm.engine.block_manager.num_retained
            results[workload][setting] = row
    llm.close()

    def get(w: str, s: str, k: str) -> Any:
        return results.get(w, {}).get(s, {}).get(k)

    def ratio(a: Any, b: Any) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    def points(w: str, a: str, b: str) -> float | None:
        x, y = get(w, a, "prefix_cache_hit_rate"), get(w, b, "prefix_cache_hit_rate")
        return round(100 * (x - y), 1) if x is not None and y is not None else None

    summary = {
        "sessions_prefill_computed_cache_vs_no_cache": ratio(
            get("sessions", "cache_aware", "prefill_tokens_computed"),
            get("sessions", "no_cache", "prefill_tokens_computed"),
        ),
        "documents_hit_rate_points_clustering_minus_cache_fcfs": points(
            "documents", "clustering", "cache_fcfs"
        ),
        # what clustering adds on top of cache-aware ordering alone
        "documents_hit_rate_points_clustering_minus_cache_aware": points(
            "documents", "clustering", "cache_aware"
        ),
        # the targets: under memory pressure, clustering vs cache-aware order alone
        "hot_documents_hit_rate_points_clustering_minus_cache_aware": points(
            "hot_documents", "clustering", "cache_aware"
        ),
        "hot_documents_prefill_computed_clustering_vs_cache_aware": ratio(
            get("hot_documents", "clustering", "prefill_tokens_computed"),
            get("hot_documents", "cache_aware", "prefill_tokens_computed"),
        ),
        "hot_documents_ttft_p99_clustering_vs_cache_aware": ratio(
            get("hot_documents", "clustering", "ttft_p99_s"),
            get("hot_documents", "cache_aware", "ttft_p99_s"),
        ),
        "unrelated_throughput_clustering_vs_cache_aware": ratio(
            get("unrelated", "clustering", "output_tokens_per_s"),
            get("unrelated", "cache_aware", "output_tokens_per_s"),
        ),
        "documents_throughput_clustering_vs_cache_aware": ratio(
            get("documents", "clustering", "output_tokens_per_s"),
            get("documents", "cache_aware", "output_tokens_per_s"),
        ),
        "unrelated_throughput_clustering_vs_no_cache": ratio(
            get("unrelated", "clustering", "output_tokens_per_s"),
            get("unrelated", "no_cache", "output_tokens_per_s"),
        ),
        "unrelated_throughput_cache_fcfs_vs_no_cache": ratio(
            get("unrelated", "cache_fcfs", "output_tokens_per_s"),
            get("unrelated", "no_cache", "output_tokens_per_s"),
        ),
    }
    result: dict[str, Any] = {
        "model": args.model,
        "dtype": "float32",
        "quantization": getattr(llm.engine.config, "quantization", "none"),
        "device": "cpu",
        "quick": quick,
        "rates": rates,
        "max_tokens": max_tokens,
        "num_kv_blocks": num_kv_blocks,
        "block_size": 16,
        "policy": "fcfs",
        "seed": args.seed,
        "results": results,
        "summary": summary,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    if args.json:
        plot = Path(args.json).with_suffix(".png")
        plot.parent.mkdir(parents=True, exist_ok=True)
        result["plot"] = str(plot) if _plot(results, plot) else "matplotlib missing"
    return result
