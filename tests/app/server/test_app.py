"""What importing the app costs a cold start: the heavy SDKs of optional routes load
when first used, not before the port answers (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LATER = ("mcp", "mcp_types", "aiortc", "httpx2", "transformers", "sympy")


def _modules_after(code: str) -> set[str]:
    probe = (
        code
        + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_app_imports_neither_mcp_nor_aiortc_nor_transformers() -> None:
    loaded = _modules_after("from app.server.app import create_app; create_app()")
    assert "fastapi" in loaded and "torch" in loaded  # the probe saw the app's imports
    assert loaded.isdisjoint(LATER), sorted(loaded & set(LATER))


def test_their_routes_still_import_them_when_used() -> None:
    loaded = _modules_after(
        "from app.server.webrtc.peer import Peer\nfrom app.tools.mcp_connection import failure\n"
        "failure(TimeoutError(), 'http://x')"
    )
    assert {"aiortc", "mcp", "httpx2"} <= loaded
