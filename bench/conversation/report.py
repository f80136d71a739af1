"""`bench conversation`: each part's counts against its target, its times, and the table
printed on stdout."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from bench.voice.stats import summarize

# The share of trials that must go right (issue #27: 19/20, 20/20, 18/20), and the time
# by which the words must have decided, after the speech's end.
TARGET_SHARE = {"backchannel": 0.95, "interruption": 1.0, "false": 0.9}
DECISION_TARGET_MS = 500.0
# What a part counts as going right, and the name of that count.
GOOD = {"backchannel": "survived", "interruption": "interrupted", "false": "resumed"}


def went_right(part: str, trial: dict[str, Any]) -> bool:
    """Backchannel and non-speech: the answer played to its end, its item holding the whole
    text; an interruption: the answer was cancelled."""
    if part == "interruption":
        return trial.get("status") == "cancelled"
    return bool(trial.get("whole"))


def summarize_part(part: str, trials: list[dict[str, Any]]) -> dict[str, Any]:
    overlapped = [t for t in trials if t.get("overlapped")]
    good = sum(went_right(part, t) for t in overlapped)
    needed = math.ceil(TARGET_SHARE[part] * len(trials))
    by_voice: dict[str, list[int]] = {}
    for t in overlapped:
        row = by_voice.setdefault(t["voice"], [0, 0])
        row[0] += went_right(part, t)
        row[1] += 1
    paused = [t for t in overlapped if t["paused"]]
    final = Counter(next((v for v in t["verdicts"] if v != "wait"), "none") for t in paused)
    out: dict[str, Any] = {
        "trials": len(trials),
        "overlapped": len(overlapped),
        "paused": len(paused),
        GOOD[part]: good,
        "target": f">= {needed}/{len(trials)}",
        "target_met": good >= needed,
        "by_voice": {voice: f"{g}/{n}" for voice, (g, n) in sorted(by_voice.items())},
        "verdicts": dict(sorted(final.items())),
        "decision_after_speech_end_ms": summarize(
            t["decision_after_speech_end_ms"] for t in paused
        ),
        "stop_ms": summarize(t["stop_ms"] for t in paused),
        "problems": [f"{t['overlap']}: {t['problem']}" for t in trials if t.get("problem")],
        "wrong": [
            {k: t.get(k) for k in ("overlap", "status", "verdicts", "heard")}
            for t in overlapped
            if not went_right(part, t)
        ],
    }
    if part == "interruption":
        cancelled = [t for t in overlapped if t.get("status") == "cancelled"]
        out["done_ms"] = summarize(t["done_ms"] for t in cancelled)
        # what pausing costs: the cancel comes when the words are known, not at the stop
        out["cancel_after_stop_ms"] = summarize(
            None if t["done_ms"] is None or t["stop_ms"] is None else t["done_ms"] - t["stop_ms"]
            for t in cancelled
        )
    return out


def decision_summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """Speech end -> the verdict that decides, over every trial that paused its answer."""
    paused = [t for t in trials if t.get("overlapped") and t["paused"]]
    times = summarize(t["decision_after_speech_end_ms"] for t in paused)
    p50 = times["p50"]
    # Mandarin is heard by whisper-base, whose pass is slower: its times apart
    by_language = {
        language: summarize(
            t["decision_after_speech_end_ms"] for t in paused if t["language"] == language
        )
        for language in sorted({t["language"] for t in paused})
    }
    return {
        **times,
        "target_ms": DECISION_TARGET_MS,
        "p50_met": p50 is not None and p50 <= DECISION_TARGET_MS,
        "by_language": by_language,
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def table(result: dict[str, Any]) -> str:
    machine = result["machine"]
    lines = [
        f"bench conversation: {machine['cpu_model']} ({machine['cpu_affinity']} cores), "
        f"seed {result['seed']}, answers of at most {result['answer_tokens']} tokens, "
        f"{result['wall_s']} s",
        f"{'part':13s} {'went right':22s} {'target':>10s} {'met':>4s} {'paused':>7s}"
        f" {'decision P50/P95':>18s} {'stop P50':>9s}",
    ]
    for part, s in result["parts"].items():
        d, stop = s["decision_after_speech_end_ms"], s["stop_ms"]
        right = f"{s[GOOD[part]]}/{s['trials']} {GOOD[part]}"
        lines.append(
            f"{part:13s} {right:22s} {s['target']:>10s} {'yes' if s['target_met'] else 'no':>4s}"
            f" {s['paused']:>7d} {_ms(d['p50']) + ' / ' + _ms(d['p95']):>18s}"
            f" {_ms(stop['p50']):>9s}"
        )
        if part == "interruption":
            lines.append(
                f"{'':13s} cancel (response.done) P50 {_ms(s['done_ms']['p50'])}, "
                f"{_ms(s['cancel_after_stop_ms']['p50'])} after the audio stopped"
            )
        lines.append(f"{'':13s} by voice {s['by_voice']}, verdicts {s['verdicts']}")
        for wrong in s["wrong"]:
            lines.append(f"{'':13s} wrong: {wrong}")
    d = result["decision_ms"]
    lines.append(
        f"decision after the speech's end, all parts: P50 {_ms(d['p50'])}, P95 {_ms(d['p95'])}"
        f" (n={d['n']}; target P50 <= {d['target_ms']:.0f} ms: {'met' if d['p50_met'] else 'not met'})"
    )
    for language, times in d["by_language"].items():
        lines.append(f"{'':13s} {language}: P50 {_ms(times['p50'])}, P95 {_ms(times['p95'])}")
    return "\n".join(lines)
