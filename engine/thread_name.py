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
from collections.abc import Iterator
from contextlib import contextmanager

_PR_SET_NAME = 15
_PR_GET_NAME = 16
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


def os_thread_name() -> str | None:
    """The calling thread's OS name (None off Linux or if libc refuses)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        buf = ctypes.create_string_buffer(MAX_LEN + 1)
        return buf.value.decode() if int(libc.prctl(_PR_GET_NAME, buf, 0, 0, 0)) == 0 else None
    except (OSError, AttributeError):
        return None


@contextmanager
def os_thread_named(name: str) -> Iterator[None]:
    """The calling thread carries `name` inside the block, its own name again after it.
    A model loaded inside carries its stage's name into the threads its library starts
    then (CTranslate2's workers, onnxruntime's pool), which live as long as the model."""
    before = os_thread_name()
    set_os_thread_name(name)
    try:
        yield
    finally:
        if before is not None:
            set_os_thread_name(before)
