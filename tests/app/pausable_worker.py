"""A worker for test_pausable_process.py: `python -m tests.app.pausable_worker`."""

from __future__ import annotations

import os
import time
from typing import Any

from app.pausable_process import serve


def handle(request: Any) -> Any:
    kind, value = request
    if kind == "echo":
        return value
    if kind == "spin":  # busy for `value` seconds of this process's own CPU time
        end = time.process_time() + value
        while time.process_time() < end:
            pass
        return "spun"
    if kind == "print":
        print("this goes to stderr, not into the replies")
        return value
    if kind == "exit":
        os._exit(value)
    raise ValueError(f"unknown request {kind!r}")


if __name__ == "__main__":
    serve(lambda: handle)
