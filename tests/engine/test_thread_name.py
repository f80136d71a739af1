"""The OS thread name: what /proc, `top -H` and `r1voice bench capacity` see."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from engine.thread_name import MAX_LEN, os_thread_name, os_thread_named, set_os_thread_name


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


def _comm() -> str:
    return Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl: Linux")
def test_threads_started_inside_a_named_block_carry_its_name_and_the_caller_gets_its_own_back() -> (
    None
):
    """What load_components does while a model loads: its library's threads (started
    then) carry the stage's name, so `bench capacity` counts their CPU to the stage."""
    seen: list[str] = []

    def loader() -> None:
        before = _comm()
        with os_thread_named("asr-load"):
            child = threading.Thread(target=lambda: seen.append(_comm()))
            child.start()
            child.join()
            seen.append(str(os_thread_name()))
        seen.append(_comm() if _comm() == before else f"not restored: {_comm()}")

    worker = threading.Thread(target=loader)
    worker.start()
    worker.join()
    assert seen[:2] == ["asr-load", "asr-load"] and not seen[2].startswith("not restored")
