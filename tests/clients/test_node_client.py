"""OpenAI's Agents SDK for JavaScript (`@openai/agents-realtime`, its WebSocket transport
under Node) against r1voice served over TLS (uvicorn's ssl_certfile/ssl_keyfile, as
`r1voice serve --ssl-certfile/--ssl-keyfile` does), with a self-signed certificate that
Node is told to trust. The scenarios live in node/agents_realtime.test.mjs (node's
built-in test runner); `make test` installs its npm packages (npm ci)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.app.protocol.test_ga_conformance import invalid_events
from tests.clients.conftest import (
    BARGE_IN_S,
    GA_QUERY,
    LONG_ANSWER,
    SHORT_ANSWER,
    ScriptedServer,
    self_signed_cert,
    speech_pcm,
)

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "agents_realtime.test.mjs"
TOOL_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'

SCENARIOS: dict[str, list[list[str]]] = {
    "text turn": [SHORT_ANSWER],
    "audio turn": [SHORT_ANSWER],
    "barge-in truncates the answer while it plays": [LONG_ANSWER],
    "tool call round trip": [[TOOL_CALL], ["It is sunny ", "in Paris."]],
}


@pytest.fixture(scope="module")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (make install)")
    if not (NODE_DIR / "node_modules" / "@openai" / "agents-realtime").is_dir():
        pytest.skip(f"npm packages missing: run `make test` (npm ci --prefix {NODE_DIR})")
    return node


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_agents_realtime_js_over_tls(
    scenario: str, node: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    cert, key = self_signed_cert(tmp_path)
    (tmp_path / "speech.pcm").write_bytes(speech_pcm())
    (tmp_path / "barge_in.pcm").write_bytes(speech_pcm(BARGE_IN_S))
    events_out = tmp_path / "events.json"
    with scripted_server(*SCENARIOS[scenario], ssl_certfile=cert, ssl_keyfile=key) as address:
        env = {
            **os.environ,
            "NODE_EXTRA_CA_CERTS": str(cert),  # verified TLS: no NODE_TLS_REJECT_UNAUTHORIZED
            "R1VOICE_URL": f"wss://{address}/v1/realtime{GA_QUERY}",
            "R1VOICE_EVENTS_OUT": str(events_out),
            "R1VOICE_SPEECH_PCM": str(tmp_path / "speech.pcm"),
            "R1VOICE_BARGE_IN_PCM": str(tmp_path / "barge_in.pcm"),
            "R1VOICE_TIMEOUT_MS": os.environ.get("R1VOICE_TIMEOUT_MS", "240000"),
        }
        run = subprocess.run(
            [node, "--test", f"--test-name-pattern=^{scenario}$", str(SCRIPT)],
            cwd=NODE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=500,
        )
    seen = json.loads(events_out.read_text()) if events_out.exists() else {}
    assert run.returncode == 0, (
        run.stdout[-6000:]
        + run.stderr[-3000:]
        + f"\nserver events: {[e['type'] for e in seen.get('received', [])]}"
        + f"\nSDK errors: {seen.get('sdkErrors')}"
    )
    assert "# pass 1" in run.stdout, run.stdout[-3000:]  # the scenario ran, not skipped
    result: dict[str, Any] = seen
    received = result["received"]
    assert received and received[0]["type"] == "session.created"
    assert invalid_events(received) == []
    assert [e for e in result["sdkErrors"] if "r1voice." not in e] == []
