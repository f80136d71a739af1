"""The OS thread name: what /proc, `top -H` and `r1voice bench capacity` see."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from engine.thread_name import MAX_LEN, set_os_thread_name


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl: Linux")
def test_the_calling_thread_gets_the_name_cut_to_what_the_kernel_keeps() -> None:
    seen: list[str] = []

    def named() -> None:
        assert set_os_thread_name("r1voice-engine-and-more")
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip())

    worker = threading.Thread(target=named)  # Python's name alone reaches no OS tool
    worker.start()
    worker.join()
    assert seen == ["r1voice-engine-and-more"[:MAX_LEN]]
    main = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()
    assert main != seen[0]  # only the calling thread was named
