"""The client snippets of README.md's "Clients" section, run as written against a live
server (only their URL is pointed at it): the openai Python SDK, openai-agents'
RealtimeAgent and the JS Agents SDK over TLS."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import GA_QUERY, SHORT_ANSWER, ScriptedServer, self_signed_cert
from tests.clients.test_node_client import NODE_DIR

README = Path(__file__).resolve().parents[2] / "README.md"
ANSWER = "".join(SHORT_ANSWER)


def snippets(language: str) -> list[str]:
    """The ```language blocks of the README's "Clients" section, in order."""
    text = README.read_text()
    section = re.search(r"^### Clients\n(.*?)(?=^##+ )", text, re.S | re.M)
    assert section is not None, "README.md has no Clients section"
    return re.findall(rf"^```{language}\n(.*?)^```", section.group(1), re.S | re.M)


def pointed(snippet: str, url: str, live_url: str) -> str:
    assert url in snippet, f"the snippet no longer uses {url}"
    return snippet.replace(url, live_url)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "OPENAI_API_KEY": ""},
    )


@pytest.mark.timeout(600)
def test_openai_python_sdk_snippet(scripted_server: ScriptedServer) -> None:
    openai_sdk, _ = snippets("python")
    with scripted_server(SHORT_ANSWER) as address:
        run = run_python(pointed(openai_sdk, "ws://127.0.0.1:8000/v1", f"ws://{address}/v1"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == ANSWER


@pytest.mark.timeout(600)
def test_openai_agents_snippet(scripted_server: ScriptedServer) -> None:
    _, agents_sdk = snippets("python")
    url = "ws://127.0.0.1:8000/v1/realtime"
    with scripted_server(SHORT_ANSWER) as address:
        run = run_python(pointed(agents_sdk, url, f"ws://{address}/v1/realtime{GA_QUERY}"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == ANSWER


@pytest.mark.timeout(600)
def test_js_agents_sdk_snippet(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    if not (NODE_DIR / "node_modules" / "@openai" / "agents-realtime").is_dir():
        pytest.skip(f"npm packages missing: run `make test` (npm ci --prefix {NODE_DIR})")
    (js,) = snippets("js")
    cert, key = self_signed_cert(tmp_path)
    script = NODE_DIR / ".readme_snippet.mjs"  # beside node_modules, so imports resolve
    with scripted_server(SHORT_ANSWER, ssl_certfile=cert, ssl_keyfile=key) as address:
        url = f"wss://{address}/v1/realtime{GA_QUERY}"
        script.write_text(pointed(js, "wss://127.0.0.1:8443/v1/realtime", url))
        try:
            run = subprocess.run(
                ["node", str(script)],
                cwd=NODE_DIR,
                capture_output=True,
                text=True,
                timeout=400,
                env={**os.environ, "NODE_EXTRA_CA_CERTS": str(cert)},
            )
        finally:
            script.unlink()
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == ANSWER
