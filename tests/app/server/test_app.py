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


# Records, for each watched package, whether its first import ran on a thread with an
# event loop running (the server's loop, where every session waits on it) or not.
_PROBE = """
import asyncio, json, sys
seen = {}
class Probe:
    def find_spec(self, name, path=None, target=None):
        if name in WATCHED and name not in seen:
            try:
                asyncio.get_running_loop()
                seen[name] = "event loop"
            except RuntimeError:
                seen[name] = "thread"
        return None
sys.meta_path.insert(0, Probe())
"""


def _first_imports(watched: tuple[str, ...], code: str) -> dict[str, str]:
    probe = f"WATCHED = {watched!r}\n{_PROBE}\n{code}\nprint(json.dumps(seen))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_first_webrtc_call_imports_aiortc_off_the_event_loop() -> None:
    """Each WebRTC route's first request (here one the server then refuses) imports
    aiortc on a worker thread: on the loop, it would stall every session."""
    for path in ("/v1/realtime/calls", "/v1/live/sessions"):
        seen = _first_imports(
            ("aiortc",),
            "from fastapi.testclient import TestClient\n"
            "from app.server.app import create_app\n"
            f"r = TestClient(create_app()).post({path!r}, content=b'x')\n"
            "assert r.status_code >= 400, r.status_code",
        )
        assert seen == {"aiortc": "thread"}, path


def test_a_first_mcp_connection_imports_the_sdk_off_the_event_loop() -> None:
    seen = _first_imports(
        ("mcp", "httpx2"),
        "from app.tools.mcp_connection import McpConnection, McpFailure\n"
        "from app.tools.policy import McpPolicy\n"
        "policy = McpPolicy(allowed_urls=('http://127.0.0.1:',), timeout_s=2.0)\n"
        "connection = McpConnection('http://127.0.0.1:9/mcp', None, policy)\n"
        "async def first_use():\n"
        "    try:\n"
        "        await connection.list_tools()\n"
        "    except McpFailure as exc:\n"
        "        assert 'could not be reached' in str(exc) or 'in time' in str(exc), exc\n"
        "    else:\n"
        "        raise AssertionError('listed tools of no server')\n"
        "    finally:\n"
        "        await connection.close()\n"
        "asyncio.run(first_use())",
    )
    assert seen == {"mcp": "thread", "httpx2": "thread"}
