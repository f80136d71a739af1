"""Scoring: word error rate, percentiles, summaries of a concurrency level and of the ASR."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from app.speech.mandarin import read_numbers
from app.text_units import has_han, units
from bench.voice.common import ANSWERED, TARGETS_MS

if TYPE_CHECKING:
    from bench.voice.workload import Clip


def normalize_words(text: str) -> list[str]:
    """Lower case, apostrophes dropped, other punctuation as spaces, split into words:
    text units, so Chinese counts characters (its error rate is the usual CER), with
    its numbers read out."""
    text = text.lower().replace("'", "").replace("’", "")
    if has_han(text):
        text = read_numbers(text)
    return units(re.sub(r"[^\w\s]|_", " ", text))


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Levenshtein distance (substitutions + deletions + insertions) between word lists."""
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word errors, reference words) after normalization."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    return edit_distance(ref, hyp), len(ref)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER = (substitutions + deletions + insertions) / reference words."""
    errors, n = word_errors(reference, hypothesis)
    if n == 0:
        raise ValueError("the reference has no words; WER is undefined")
    return errors / n


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between closest ranks (numpy's
    default); None for no values."""
    data = sorted(values)
    if not data:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within [0, 100], got {q}")
    k = (len(data) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def median_interval(values: Iterable[float], confidence: float = 0.9) -> list[float] | None:
    """A distribution-free interval for the median: [x(j), x(n+1-j)] of the sorted values,
    with the largest j whose coverage, 1 - 2 P(Binomial(n, 1/2) < j), is at least
    `confidence` (the sign test's interval; no assumption about the values' shape). None
    where even [min, max] covers less (fewer than 5 values at 0.9)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    data = sorted(values)
    n = len(data)
    below = 0.0  # P(B < j), B ~ Binomial(n, 1/2)
    j = 0
    while j < n // 2:
        step = below + math.comb(n, j) / 2**n
        if 1 - 2 * step < confidence:
            break
        below, j = step, j + 1
    if j == 0:
        return None
    return [data[j - 1], data[n - j]]


def summarize(values: Iterable[float | None]) -> dict[str, Any]:
    """n, mean, P50, P95, min, max of the values that are not None (rounded to 0.1)."""
    data = [float(v) for v in values if v is not None]

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    return {
        "n": len(data),
        "mean": r(sum(data) / len(data)) if data else None,
        "p50": r(percentile(data, 50)),
        "p95": r(percentile(data, 95)),
        "min": r(min(data)) if data else None,
        "max": r(max(data)) if data else None,
    }


def paired_gap(
    pairs: list[dict[str, Any]], other: str, key: str = "voice_to_voice_audible_ms"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pairs of the same clip said over the WebSocket and over `other` (a phone call, a
    board): each side's summary of `key`, and `other` minus the WebSocket per pair, with
    the median's 90% interval (pairs where either side has no figure are left out)."""
    sides = {t: summarize(p[t][key] for p in pairs) for t in ("websocket", other)}
    diffs = [
        p[other][key] - p["websocket"][key]
        for p in pairs
        if p[other][key] is not None and p["websocket"][key] is not None
    ]
    return sides, summarize(diffs) | {"p50_ci90": median_interval(diffs)}


def level_summary(
    n_sessions: int, n_turns: int, delays: list[float], sessions: list[dict[str, Any]]
) -> dict[str, Any]:
    turns = [turn for s in sessions for turn in s["turns"]]
    ok = [t for t in turns if t["status"] in ANSWERED and t["voice_to_voice_ms"] is not None]
    v2v = summarize(t["voice_to_voice_ms"] for t in ok)
    stages = (
        "speech_stopped_to_transcript_ms",
        "speech_stopped_to_first_token_ms",
        "speech_stopped_to_first_clause_ms",
        "speech_stopped_to_first_synthesized_ms",
        "speech_stopped_to_first_audio_ms",
    )
    out = {
        "sessions": n_sessions,
        "turns_per_session": n_turns,
        "session_start_offsets_s": delays,
        "turns": len(turns),
        "turns_ok": len(ok),
        "voice_to_voice_ms": v2v,
        "voice_to_voice_target_ms": {
            "p50": TARGETS_MS["voice_to_voice_p50"],
            "p95": TARGETS_MS["voice_to_voice_p95"],
            "p50_met": v2v["p50"] is not None and v2v["p50"] <= TARGETS_MS["voice_to_voice_p50"],
            "p95_met": v2v["p95"] is not None and v2v["p95"] <= TARGETS_MS["voice_to_voice_p95"],
        },
        "server_breakdown_ms": {
            stage: summarize((t.get("server") or {}).get(stage) for t in ok) for stage in stages
        },
        "client_speech_end_to_speech_stopped_event_ms": summarize(
            t["speech_end_to_speech_stopped_event_ms"] for t in ok
        ),
        "mic_max_lag_ms": max(s["mic_max_lag_ms"] for s in sessions),
        "session_errors": [s["error"] for s in sessions if s["error"]],
        "details": turns,
    }
    if any("voice_to_voice_audible_ms" in t for t in ok):  # r1voice's, either transport
        out["voice_to_voice_audible_ms"] = summarize(t.get("voice_to_voice_audible_ms") for t in ok)
    if any("voice_to_voice_started_event_ms" in t for t in ok):  # a WebRTC level
        out["voice_to_voice_started_event_ms"] = summarize(
            t.get("voice_to_voice_started_event_ms") for t in ok
        )
    return out


def wer_summary(turns: list[dict[str, Any]], clips: dict[str, Clip]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("human", "tts"):
        rows = []
        errors = words = 0
        for turn in turns:
            if turn["kind"] != kind or turn["transcript"] is None:
                continue
            ref = clips[turn["clip"]].text
            e, n = word_errors(ref, turn["transcript"])
            errors, words = errors + e, words + n
            rows.append(
                {"clip": turn["clip"], "transcript": turn["transcript"], "wer": round(e / n, 4)}
            )
        out[kind] = {
            "wer": round(errors / words, 4) if words else None,
            "n_utterances": len(rows),
            "n_reference_words": words,
            "references": {
                c.name: c.text
                for c in clips.values()
                if c.kind == kind and c.name in {r["clip"] for r in rows}
            },
            "details": rows,
        }
    return out
