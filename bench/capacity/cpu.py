"""Where a level's CPU time went: each thread's CPU seconds from /proc (the server and
its worker processes), the share of each pipeline stage, and this process's own."""

from __future__ import annotations

from typing import Any

# The server's threads by the stage they serve: OS thread names, given by app/executor.py
# and the engine (engine/thread_name.py); a thread a library starts inherits the name of
# the thread that started it (a model's load thread, "asr-load", starts CTranslate2's).
STAGES = {
    "asr": ("asr",),
    "tts": ("tts",),
    "vad": ("vad",),
    "turn model": ("turn",),
    "llm": ("r1voice-engine", "llm"),
}


def _children(pid: int) -> list[int]:
    from pathlib import Path

    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread name of process `pid` and its worker
    processes (the partial passes' "asr-partial"), summed by name."""
    import os
    from pathlib import Path

    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for process in (pid, *_children(pid)):
        for task in Path(f"/proc/{process}/task").glob("*"):
            try:
                name = (task / "comm").read_text().strip()
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def stage_shares(
    before: dict[str, float],
    after: dict[str, float],
    stages: dict[str, tuple[str, ...]] = STAGES,
) -> dict[str, Any]:
    """Each stage's share of the server's CPU time between two `thread_cpu` readings
    (threads of no stage are "other": the event loop, the HTTP server, ...). A thread that
    ended between the readings is missed."""
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    total = sum(v for v in spent.values() if v > 0)
    by_stage: dict[str, float] = {stage: 0.0 for stage in stages}
    by_stage["other"] = 0.0
    for name, seconds in spent.items():
        stage = next((s for s, prefixes in stages.items() if name.startswith(prefixes)), "other")
        by_stage[stage] += max(seconds, 0.0)
    return {
        "server_cpu_s": round(total, 2),
        "share": {s: round(v / total, 3) if total else None for s, v in by_stage.items()},
    }


def own_cpu() -> float:
    import os

    t = os.times()
    return t.user + t.system
