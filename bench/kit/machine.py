"""What a benchmark result says about the machine it ran on: the CPU model and its flags,
the cores this process may use, the OS and Python."""

from __future__ import annotations

from typing import Any


def cpu_info() -> dict[str, Any]:
    """The CPU model and flags from /proc/cpuinfo (Linux; elsewhere what `platform` says)."""
    import platform
    from pathlib import Path

    model: str | None = None
    flags: list[str] = []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model") and model is None:
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = sorted(value.split())
    except OSError:
        pass
    return {"cpu_model": model or platform.processor() or None, "cpu_flags": flags}


def describe() -> dict[str, Any]:
    import os
    import platform

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        **cpu_info(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
