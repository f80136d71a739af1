"""Name the calling OS thread, so `top -H`, /proc and profilers see what it serves.

Python's thread names live in Python only (3.11 sets no OS name); the kernel's name is
what tools see, and a thread a native library starts (OpenMP, CTranslate2) inherits the
name of the thread that started it, so a stage's whole CPU cost carries its name
(`r1voice bench capacity` sums it by name).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_PR_SET_NAME = 15
MAX_LEN = 15  # the kernel keeps 15 bytes and a NUL


def set_os_thread_name(name: str) -> bool:
    """Give the calling thread `name` (cut to 15 bytes) on Linux; False elsewhere or if
    libc refuses (nothing else depends on it)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_NAME, name.encode()[:MAX_LEN], 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
