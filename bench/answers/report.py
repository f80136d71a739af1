"""`bench answers`: the figures of one model and language, and the table printed on stdout."""

from __future__ import annotations

from typing import Any

UNITS = {"en": "words", "zh": "chars"}


def summarize(rows: list[dict[str, Any]], lang: str) -> dict[str, Any]:
    """Accuracy, TTFT P50/P95, answer length and more over one language's rows."""
    from bench.kit.stats import percentile

    ttft = [r["ttft_s"] for r in rows if r["ttft_s"] is not None]
    lengths = [float(r["length"]) for r in rows]
    correct = sum(r["accepted"] for r in rows)
    return {
        "questions": len(rows),
        "correct": correct,
        "accuracy": round(correct / len(rows), 4) if rows else None,
        "ttft_p50_s": percentile(ttft, 50),
        "ttft_p95_s": percentile(ttft, 95),
        "length_unit": "words" if lang == "en" else "characters",
        "length_mean": round(sum(lengths) / len(lengths), 1) if lengths else None,
        "length_p50": percentile(lengths, 50),
        "in_language_share": round(sum(r["in_language"] for r in rows) / len(rows), 4)
        if rows
        else None,
        "cut_at_max_tokens": sum(r["finish_reason"] == "length" for r in rows),
        "errors": sum(1 for r in rows if r.get("error")),
        "wrong": [r["id"] for r in rows if not r["accepted"]],
    }


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def table(result: dict[str, Any]) -> str:
    """A summary row per model and language, then each model's answers with verdicts."""
    q = result["questions"]
    lines = [
        f"bench answers: {q['en']} English + {q['zh']} Chinese questions, greedy, "
        f"max_tokens {result['max_tokens']}, {result['machine']['cpu_model']} "
        f"({result['machine']['cpu_affinity']} cores), {result['wall_s']} s",
        "",
        f"{'model':28} {'lang':4} {'correct':>8} {'accuracy':>8} {'TTFT P50':>9} "
        f"{'TTFT P95':>9} {'len mean':>11} {'len P50':>11} {'in lang':>7}",
    ]
    for name, model in result["results"].items():
        for lang, s in model["languages"].items():
            unit = UNITS[lang]
            mean = "-" if s["length_mean"] is None else f"{s['length_mean']:.1f} {unit}"
            p50 = "-" if s["length_p50"] is None else f"{s['length_p50']:.0f} {unit}"
            lines.append(
                f"{name:28} {lang:4} {s['correct']:>3}/{s['questions']:<4} "
                f"{s['accuracy']:>8.1%} {_ms(s['ttft_p50_s']):>9} {_ms(s['ttft_p95_s']):>9} "
                f"{mean:>11} {p50:>11} {s['in_language_share']:>7.0%}"
            )
    for name, model in result["results"].items():
        lines += ["", f"{name} (ok: accepted; --: not accepted)"]
        for row in model["questions"]:
            mark = "ok" if row["accepted"] else "--"
            lines.append(f"  {mark} {row['id']:22} {_clip(row['answer'], 90)}")
    return "\n".join(lines)
