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
    # libgomp shortens its spin when it manages more threads than the CPUs it was started
    # on: the child gets two (as the 2-core machine the server is measured on), whatever
    # this machine has, and none of the caller's OpenMP settings.
    two = sorted(os.sched_getaffinity(0))[:2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "KMP_"))}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, order],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "OMP_NUM_THREADS": "2"},
        preexec_fn=lambda: os.sched_setaffinity(0, two),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


needs_preload = pytest.mark.skipif(
    ctranslate2_library() is None or not hasattr(os, "RTLD_DEEPBIND"),
    reason="no libctranslate2 to preload here",
)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: torch runs one thread")
@needs_preload
def test_torch_threads_keep_spinning_after_a_whisper_pass() -> None:
    """With app.speech imported first, torch's threads wait for the next region by
    spinning: the process's threads sleep ~0 times a region (a loaded machine's noise
    adds a few); bound to torch's libgomp as it was (ctranslate2 imported first), ~2 a
    region, the engine's threads asleep at each one."""
    isolated = _run("app-first")
    assert isolated["isolated"]
    assert isolated["sleeps_per_region"] < 0.5, isolated
    shared = _run("ctranslate2-first")
    assert not shared["isolated"]
    assert shared["sleeps_per_region"] > 1.0, shared


@needs_preload
def test_the_server_imports_ctranslate2_isolated() -> None:
    """Nothing the server imports reaches faster-whisper ahead of app.speech (where it
    would, ctranslate2 would bind to torch's libgomp and the preload would be skipped)."""
    check = (
        "import sys, app.cli, app.server.app\n"
        "from app.speech import openmp_isolation\n"
        "print('ctranslate2' in sys.modules, openmp_isolation._handle is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]
