"""The serve bench's table: a row per mode or server and rate, ratios against a
baseline row at each rate, where P99 crosses the SLO, and the plot of P99 against the
offered load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.serve.workload import KINDS

LATE_S = 0.1  # a request sent this much after its arrival time: the client fell behind


def meets_slo(row: dict[str, Any], slo: dict[str, float]) -> bool:
    """Every class's P99 TTFT within its SLO (a P99 never answered misses it)."""
    for kind in KINDS:
        if kind in row:
            p99 = row[kind]["ttft_p99_s"]
            if p99 is None or p99 > slo[kind]:
                return False
    return True


def slo_summary(by_rate: dict[str, dict[str, Any]], slo: dict[str, float]) -> dict[str, Any]:
    """The first rate whose P99s miss the SLOs, and the rate just below it (the highest
    of the rates met from the lowest on; a rate met again above a miss is noise) with
    its throughput."""
    rates = sorted(by_rate, key=float)
    crossed = next((r for r in rates if not meets_slo(by_rate[r], slo)), None)
    met = rates[: rates.index(crossed)] if crossed is not None else rates
    best = met[-1] if met else None
    return {
        "max_rate_within_slo": float(best) if best else None,
        "requests_per_s_within_slo": by_rate[best]["requests_per_s"] if best else 0.0,
        "goodput_within_slo": by_rate[best]["goodput_requests_per_s"] if best else 0.0,
        "p99_crosses_slo_at": float(crossed) if crossed else None,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def ratios(results: dict[str, dict[str, dict[str, Any]]], base: str) -> dict[str, Any]:
    """Each row against `base` at the same rate: throughput, goodput, P99s."""
    out: dict[str, Any] = {}
    for name, by_rate in results.items():
        if name == base:
            continue
        for rate, row in by_rate.items():
            ref = results[base].get(rate)
            if ref is None:
                continue
            out.setdefault(name, {})[rate] = {
                "requests_per_s": _ratio(row["requests_per_s"], ref["requests_per_s"]),
                "goodput": _ratio(row["goodput_requests_per_s"], ref["goodput_requests_per_s"]),
                "e2e_p99": _ratio(row["e2e_p99_s"], ref["e2e_p99_s"]),
                "short_ttft_p99": _ratio(
                    row.get("short", {}).get("ttft_p99_s"), ref.get("short", {}).get("ttft_p99_s")
                ),
            }
    return out


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}"


def format_rows(result: dict[str, Any]) -> str:
    head = (
        f"{'row':10} {'rate':>5} | {'TTFT P50/P99 short':>18} {'chat':>11} {'long':>11} | "
        f"{'E2E P50/P99':>12} | {'req/s':>6} {'tok/s':>7} {'good':>6} | "
        f"{'idle':>5} {'pre':>4} {'ref':>4} {'fail':>4}"
    )
    lines = [head, "-" * len(head)]
    for name, by_rate in result["results"].items():
        for rate, row in by_rate.items():
            ttft = [
                f"{_s(row[k]['ttft_p50_s'])}/{_s(row[k]['ttft_p99_s'])}" if k in row else "-"
                for k in KINDS
            ]
            engine = row.get("engine", {})
            late = row.get("send_lag_max_s", 0.0) > LATE_S
            idle = engine.get("idle_waiting_share", 0.0) + engine.get("idle_empty_share", 0.0)
            lines.append(
                f"{name:10} {float(rate):5.2f} | {ttft[0]:>18} {ttft[2]:>11} {ttft[1]:>11} | "
                f"{_s(row['e2e_p50_s']) + '/' + _s(row['e2e_p99_s']):>12} | "
                f"{row['requests_per_s']:6.2f} {row['output_tokens_per_s']:7.1f} "
                f"{row['goodput_requests_per_s']:6.2f} | "
                f"{(f'{idle:.2f}' if engine else '-'):>5} {engine.get('preemptions', '-'):>4} "
                f"{row['refused']:>4} {row['failed']:>4}"
                + (f"  client {row['send_lag_max_s']:.2f} s late" if late else "")
            )
    for name, summary in result.get("slo", {}).items():
        lines.append(
            f"{name}: P99 within the SLOs up to {summary['max_rate_within_slo']} req/s "
            f"({summary['requests_per_s_within_slo']} answered/s), crosses at "
            f"{summary['p99_crosses_slo_at']}"
        )
    for name, value in result.get("targets", {}).items():
        lines.append(f"{name}: {value}")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, by_rate in result["results"].items():
        rates = sorted(by_rate, key=float)
        xs = [float(r) for r in rates]
        short = [by_rate[r].get("short", {}).get("ttft_p99_s") for r in rates]
        e2e = [by_rate[r]["e2e_p99_s"] for r in rates]
        axes[0].plot(xs, [float("nan") if v is None else v for v in short], marker="o", label=name)
        axes[1].plot(xs, [float("nan") if v is None else v for v in e2e], marker="o", label=name)
    labels = ("short requests: P99 TTFT (s)", "all requests: P99 end-to-end (s)")
    for ax, what in zip(axes, labels, strict=True):
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(what)
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"bench serve: {result['model']} on {result.get('cpu', 'this CPU')}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _short_p99(row: dict[str, Any] | None) -> float | None:
    return None if row is None else row.get("short", {}).get("ttft_p99_s")


def targets(result: dict[str, Any]) -> dict[str, Any]:
    """Issue #54's same-run ratios, from the rows there are: throughput within the SLOs
    and P99 end-to-end against static (at static's saturation: the highest rate it
    meets the SLOs at, else the lowest rate), and short requests' P99 TTFT of the
    preempting modes against fcfs and reorder at each rate; for servers, each one's
    goodput within the SLOs against r1voice's."""
    res, slo = result["results"], result["slo"]
    out: dict[str, Any] = {}
    if "static" in res:
        sat = slo["static"]["max_rate_within_slo"] or min(float(r) for r in res["static"])
        out["static_saturation_rate"] = sat
        for name in res:
            if name == "static":
                continue
            st, me = (
                slo["static"]["requests_per_s_within_slo"],
                slo[name]["requests_per_s_within_slo"],
            )
            out[f"throughput_within_slo_{name}_vs_static"] = _ratio(me, st) if st else None
            here, base = res[name].get(str(sat)), res["static"].get(str(sat))
            if here and base:
                out[f"e2e_p99_{name}_vs_static_at_saturation"] = _ratio(
                    here["e2e_p99_s"], base["e2e_p99_s"]
                )
    for fast in ("priority", "product"):
        for slow in ("fcfs", "reorder"):
            if fast in res and slow in res:
                out[f"short_ttft_p99_{fast}_vs_{slow}"] = {
                    r: _ratio(_short_p99(row), _short_p99(res[slow].get(r)))
                    for r, row in res[fast].items()
                }
    if "r1voice" in res:
        ours = slo["r1voice"]["goodput_within_slo"]
        for peer in ("vllm", "llama.cpp"):
            if peer in res:
                theirs = slo[peer]["goodput_within_slo"]
                out[f"goodput_within_slo_r1voice_vs_{peer}"] = (
                    _ratio(ours, theirs) if theirs else None
                )
                out[f"goodput_r1voice_vs_{peer}_per_rate"] = {
                    r: _ratio(row["goodput_requests_per_s"], res[peer][r]["goodput_requests_per_s"])
                    for r, row in res["r1voice"].items()
                    if r in res[peer]
                }
    return out
