"""`bench capacity`'s CPU sampling: threads by name from /proc, and each stage's share."""

from __future__ import annotations

import os
import threading

from bench.capacity import cpu
from engine.thread_name import set_os_thread_name


def test_stage_shares_sum_the_threads_of_each_stage() -> None:
    before = {"asr_0": 1.0, "tts_0": 0.5, "r1voice-engine": 2.0, "python": 1.0}
    after = {
        "asr_0": 3.0,
        "tts_0": 1.5,
        "r1voice-engine": 5.0,
        "llm-tokenizer_0": 1.0,
        "python": 2.0,
    }
    shares = cpu.stage_shares(before, after)
    assert shares["server_cpu_s"] == 8.0
    assert shares["share"] == {
        "asr": 0.25,
        "tts": 0.125,
        "vad": 0.0,
        "turn model": 0.0,
        "llm": 0.5,  # the engine's thread and the tokenizer's
        "other": 0.125,
    }


def test_thread_cpu_reads_this_process_by_thread_name() -> None:
    done = threading.Event()

    def spin() -> None:
        assert set_os_thread_name("asr_test")  # what the server's model threads do
        x = 0
        while not done.is_set():
            x = (x * 31 + 7) % 1_000_003

    worker = threading.Thread(target=spin, name="asr_test")
    worker.start()
    try:
        import time

        time.sleep(0.3)
        seconds = cpu.thread_cpu(os.getpid())
    finally:
        done.set()
        worker.join()
    assert "asr_test" in seconds and seconds["asr_test"] >= 0.0


def test_thread_cpu_counts_the_servers_worker_processes_by_their_name() -> None:
    """The partial passes run in a worker process ("asr-partial"): its CPU is the ASR's."""
    from app.pausable_process import PausableProcess

    worker = PausableProcess("asr-partial", "tests.app.pausable_worker", [])
    try:
        worker.call(("spin", 0.2))
        seconds = cpu.thread_cpu(os.getpid())
    finally:
        worker.close()
    assert seconds.get("asr-partial", 0.0) >= 0.1
