"""One record per request sent, whatever happened to it, and the summary of a run.

A request is answered (status 200 and a stream to its end), refused (429 or 503: the
server said no) or failed (any other status, a reset, a timeout, a stream cut short).
Refused and failed requests stay in the percentiles as never answered (an infinite
TTFT and end-to-end), so a server that sheds load does not look fast for it; a
percentile they reach is reported as null beside the counts.

Pure Python, no r1voice import (the locustfile writes these records too).
"""

from __future__ import annotations

import json
import math
from typing import Any

from bench.serve.workload import KINDS

ANSWERED, REFUSED, FAILED = "answered", "refused", "failed"


class StreamTimer:
    """Reads an OpenAI chat stream's `data:` lines: the first content's time, the tokens
    (the final usage chunk's count, else one per content chunk) and whether [DONE] came."""

    def __init__(self, sent: float) -> None:
        self.sent, self.first, self.chunks, self.usage, self.done = sent, None, 0, None, False
        self.first_at: float | None = None

    def line(self, raw: str | bytes, now: float) -> None:
        text = raw.decode() if isinstance(raw, bytes) else raw
        if not text.startswith("data:"):
            return
        data = text[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        chunk = json.loads(data)
        if chunk.get("usage"):
            self.usage = chunk["usage"].get("completion_tokens")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("reasoning_content"):
                self.chunks += 1
                if self.first_at is None:
                    self.first_at = now

    def record(self, kind: str, index: int, now: float, start: float) -> dict[str, Any]:
        tokens = self.usage if self.usage is not None else self.chunks
        if not self.done or self.first_at is None:
            why = "stream ended before [DONE]" if self.first_at else "no token in the stream"
            return failed(kind, index, why, self.sent - start)
        ttft, e2e = self.first_at - self.sent, now - self.sent
        return {
            "index": index,
            "kind": kind,
            "outcome": ANSWERED,
            "sent": round(self.sent - start, 4),
            "ttft": round(ttft, 4),
            "e2e": round(e2e, 4),
            "tpot": round((e2e - ttft) / (tokens - 1), 5) if tokens > 1 else None,
            "tokens": tokens,
        }


def refused(kind: str, index: int, status: int, sent: float) -> dict[str, Any]:
    return {"index": index, "kind": kind, "outcome": REFUSED, "status": status, "sent": sent}


def failed(kind: str, index: int, why: str, sent: float) -> dict[str, Any]:
    return {"index": index, "kind": kind, "outcome": FAILED, "why": why, "sent": sent}


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (nearest rank); None when it falls on a request never answered."""
    if not values:
        return None
    ordered = sorted(values)
    value = ordered[min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1)]
    return None if math.isinf(value) else round(value, 3)


def summarize(
    records: list[dict[str, Any]], slo: dict[str, float], offered_rate: float
) -> dict[str, Any]:
    """Per class: P50/P99 of TTFT, TPOT and end-to-end; the run: requests and output
    tokens per second over the makespan (first send to last finish), goodput (answered
    within their class's TTFT SLO, per second), refusals and failures with their whys."""
    answered = [r for r in records if r["outcome"] == ANSWERED]
    ends = [r["sent"] + r["e2e"] for r in answered]
    makespan = max(ends, default=0.0) - min((r["sent"] for r in records), default=0.0)
    out: dict[str, Any] = {"offered_rate": offered_rate, "requests": len(records)}
    for kind in KINDS:
        mine = [r for r in records if r["kind"] == kind]
        if not mine:
            continue
        never = [math.inf] * sum(1 for r in mine if r["outcome"] != ANSWERED)
        ok = [r for r in mine if r["outcome"] == ANSWERED]
        ttft = [r["ttft"] for r in ok] + never
        e2e = [r["e2e"] for r in ok] + never
        tpot = [r["tpot"] for r in ok if r["tpot"] is not None]
        out[kind] = {
            "requests": len(mine),
            "ttft_p50_s": pct(ttft, 50),
            "ttft_p99_s": pct(ttft, 99),
            "e2e_p50_s": pct(e2e, 50),
            "e2e_p99_s": pct(e2e, 99),
            "tpot_p50_s": pct(tpot, 50),
            "tpot_p99_s": pct(tpot, 99),
        }
    good = sum(1 for r in answered if r["ttft"] <= slo[r["kind"]])
    everything = [r["e2e"] for r in answered] + [math.inf] * (len(records) - len(answered))
    whys: dict[str, int] = {}
    for r in records:
        if r["outcome"] != ANSWERED:
            key = f"{r['outcome']}: {r.get('status') or r.get('why')}"
            whys[key] = whys.get(key, 0) + 1
    per_s = 1 / makespan if makespan > 0 else 0.0
    out.update(
        e2e_p50_s=pct(everything, 50),
        e2e_p99_s=pct(everything, 99),
        makespan_s=round(makespan, 2),
        requests_per_s=round(len(answered) * per_s, 3),
        output_tokens_per_s=round(sum(r["tokens"] for r in answered) * per_s, 2),
        goodput_requests_per_s=round(good * per_s, 3),
        answered=len(answered),
        refused=sum(1 for r in records if r["outcome"] == REFUSED),
        failed=sum(1 for r in records if r["outcome"] == FAILED),
        not_answered=whys,
        # how late the client sent (a rate it could not generate shows here, not as
        # the server's latency)
        send_lag_max_s=round(max((r.get("lag", 0.0) for r in records), default=0.0), 3),
    )
    return out
