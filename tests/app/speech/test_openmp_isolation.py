"""Whisper's OpenMP teams do not throttle the LLM engine's (app/speech/openmp_isolation.py).

Each case runs in a fresh interpreter: which libgomp CTranslate2 binds to is decided once
per process, at its first OpenMP call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from app.speech.openmp_isolation import ctranslate2_library

# Torch first (as in the server: its libgomp in the global scope), then Whisper on two
# threads runs one pass (its OpenMP team now exists), then a thread of torch's own
# parallel regions counts how often its threads fell asleep between them.
_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading
    import numpy as np
    import torch
    torch.set_num_threads(2)
    if sys.argv[1] == "ctranslate2-first":
        import ctranslate2  # bound the usual way: app.speech can no longer isolate it
    import app.speech
    from app.catalog import registry
    from app.speech.openmp_isolation import isolate_ctranslate2_openmp
    from app.speech.whisper_loader import load_whisper

    model = load_whisper(registry.locate("whisper-tiny.en", "asr"), 2, decode_apart=True)
    noise = np.random.default_rng(0).standard_normal(16_000).astype(np.float32) * 0.01
    segments, _ = model.transcribe(noise, beam_size=1)
    list(segments)

    def sleeps():
        total = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        return total

    result = {}

    def regions(n=400):
        # this thread's team is made before counting, and is torch's only one: a second
        # thread's team (the main thread's, say) throttles the spin just as Whisper's did
        x = torch.zeros(1 << 20)
        before = sleeps()
        for _ in range(n):
            x.add_(1.0)  # one parallel region (torch's grain: 32,768 elements a thread)
        result["sleeps_per_region"] = (sleeps() - before) / n

    worker = threading.Thread(target=regions)
    worker.start()
    worker.join()
    result["isolated"] = isolate_ctranslate2_openmp()
    print(json.dumps(result))
    """
)


def _run(order: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, order],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: torch runs one thread")
@pytest.mark.skipif(ctranslate2_library() is None, reason="no libctranslate2 to preload")
def test_torch_threads_keep_spinning_after_a_whisper_pass() -> None:
    """With app.speech imported first, torch's threads wait for the next region by
    spinning (a sleep in under a tenth of them, from the machine's noise); bound to
    torch's libgomp as it was (ctranslate2 imported first), they slept at nearly every
    one: the engine's decode was 15-25% slower in the server."""
    isolated = _run("app-first")
    assert isolated["isolated"]
    assert isolated["sleeps_per_region"] < 0.1, isolated
    shared = _run("ctranslate2-first")
    assert not shared["isolated"]
    assert shared["sleeps_per_region"] > 0.5, shared
