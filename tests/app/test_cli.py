"""`r1voice serve`'s refusals of bad settings, before anything loads."""

from __future__ import annotations

import os
import subprocess
import sys


def test_serve_refuses_an_unknown_log_level_and_names_the_levels() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "R1VOICE_LOG_LEVEL": "loud"},
    )
    assert run.returncode == 2
    assert "R1VOICE_LOG_LEVEL='loud'" in run.stderr and "debug" in run.stderr
