"""`bench capacity --plot`: voice-to-voice P50 and P95 against N, a PNG."""

from __future__ import annotations

from typing import Any

from bench.kit.log import log


def plot(systems: dict[str, list[dict[str, Any]]], path: str, target_ms: float) -> str | None:
    """P50 and P95 against N, one pair of lines per system; the path, or None without
    matplotlib (a dev dependency)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no plot")
        return None
    from pathlib import Path

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, levels in systems.items():
        ns = [lv["sessions"] for lv in levels]
        for q, style in (("p50", "-o"), ("p95", "--s")):
            values = [lv["voice_to_voice_ms"][q] for lv in levels]
            ax.plot(ns, values, style, label=f"{name} {q.upper()}")
    ax.axhline(target_ms, color="grey", linewidth=0.8, label=f"P95 target {target_ms:g} ms")
    ax.set_xlabel("concurrent voice sessions")
    ax.set_ylabel("voice-to-voice (ms)")
    ax.legend()
    ax.grid(alpha=0.3)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
