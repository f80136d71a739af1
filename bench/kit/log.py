"""The progress log every bench writes to stderr: `[bench NAME] message`."""

from __future__ import annotations


def log(message: str, bench: str = "voice") -> None:
    import sys

    print(f"[bench {bench}] {message}", file=sys.stderr, flush=True)
