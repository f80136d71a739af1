"""The `openai` npm package's GPT-Live WebSocket clients (LiveWS, SidebandWS) under Node,
pointed at r1voice (served with an API key) by its baseURL only: a text turn (the
initial history ending with the user's question), an audio turn after an instructions
append, a client delegation answered with commentary, a sideband attached to a running
session that appends instructions and closes it; each ends with the close. The scenarios live
in node/live.test.mjs (node's built-in test runner); every server event they received is
checked here against the openai Python SDK's Live event models. `make test` installs the
npm packages (npm ci).

Over WebRTC (node/live_webrtc.test.mjs): the SDK's OpenAILiveWebRTC with its SDP exchange
done by `client.live.create()`; Node has no RTCPeerConnection, so @roamhq/wrtc (libwebrtc,
prebuilt in its npm package) supplies it and the microphone and speaker: the spoken clip
goes up the audio track, its transcript and the answer's come on the data channel, the
answer's audio on the remote track, then the close."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import BARGE_IN_S, SHORT_ANSWER, serve, speech_pcm
from tests.clients.test_openai_live import MODELS
from tests.conftest import app_with
from tests.fakes import ScriptedLLM

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "live.test.mjs"
WEBRTC_SCRIPT = NODE_DIR / "live_webrtc.test.mjs"
KEY = "sk-live-node"
DELEGATE = ['<tool_call>{"name": "delegate", "arguments": {"task": "Prove it."}}</tool_call>']
WAIT = ["Let me look ", "into that."]
ANSWER = ["The answer ", "is forty-two."]
SCENARIOS: dict[str, tuple[list[str], ...]] = {
    "text turn": (SHORT_ANSWER,),
    "audio turn and instructions append": (SHORT_ANSWER,),
    "delegation answered with commentary": (DELEGATE, WAIT, ANSWER),
    "sideband attached to the session": (SHORT_ANSWER,),
}


@pytest.fixture(scope="module")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (make install)")
    for package in ("openai/resources/live", "@roamhq/wrtc"):
        if not (NODE_DIR / "node_modules" / package).is_dir():
            pytest.skip(f"npm packages missing: run `make test` (npm ci --prefix {NODE_DIR})")
    return node


def invalid(events: list[dict[str, Any]]) -> list[str]:
    """The server events the Python SDK's Live models refuse (or do not know)."""
    bad = []
    for event in events:
        model = MODELS.get(event["type"])
        if model is None:
            bad.append(f"{event['type']}: not a Live event")
            continue
        try:
            model.model_validate(event)
        except Exception as exc:
            bad.append(f"{event['type']}: {str(exc).splitlines()[1:3]}")
    return bad


def run_node(
    node: str, script: Path, scenario: str, llm: ScriptedLLM, shared_components: Any, tmp: Path
) -> dict[str, Any]:
    """Serve r1voice (with an API key: the sideband needs one), run one scenario of
    `script`, check it passed and what the server sent; returns the events it received."""
    (tmp / "speech.pcm").write_bytes(speech_pcm(BARGE_IN_S))
    events_out = tmp / "events.json"
    components = dataclasses.replace(shared_components, llm=llm)
    with serve(app_with(components, api_key=KEY)) as address:
        env = {
            **os.environ,
            "R1VOICE_BASE_URL": f"http://{address}/v1",
            "R1VOICE_API_KEY": KEY,
            "R1VOICE_EVENTS_OUT": str(events_out),
            "R1VOICE_SPEECH_PCM": str(tmp / "speech.pcm"),
            "R1VOICE_TIMEOUT_MS": os.environ.get("R1VOICE_TIMEOUT_MS", "240000"),
        }
        run = subprocess.run(
            [node, "--test", f"--test-name-pattern=^{scenario}$", str(script)],
            cwd=NODE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=500,
        )
    seen: dict[str, Any] = json.loads(events_out.read_text()) if events_out.exists() else {}
    received = seen.get("received", [])
    assert run.returncode == 0, (
        run.stdout[-6000:]
        + run.stderr[-3000:]
        + f"\nserver events: {[e['type'] for e in received]}"
        + f"\nSDK errors: {seen.get('sdkErrors')}"
    )
    assert "# pass 1" in run.stdout, run.stdout[-3000:]  # the scenario ran, not skipped
    assert received[0]["type"] == "session.started"
    assert received[-1]["type"] == "session.closed"
    assert [e for e in received if e["type"] == "error"] == []
    assert invalid(received) == []
    assert seen["sdkErrors"] == []
    return seen


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_openai_js_live_client(
    scenario: str, node: str, shared_components: Any, tmp_path: Path
) -> None:
    llm = ScriptedLLM(list(SCENARIOS[scenario]))
    seen = run_node(node, SCRIPT, scenario, llm, shared_components, tmp_path)
    kinds = [e["type"] for e in seen["received"]]
    if scenario == "sideband attached to the session":  # appends and closes; asks nothing
        assert "session.instructions.appended" in kinds and not llm.prompts
    else:
        assert llm.prompts  # the SDK's turn reached the live model
        assert "session.output_transcript.delta" in kinds  # and its answer reached the SDK


@pytest.mark.timeout(600)
def test_openai_js_live_webrtc(node: str, shared_components: Any, tmp_path: Path) -> None:
    """The spoken clip heard over WebRTC and answered in words and on the audio track."""
    llm = ScriptedLLM(SHORT_ANSWER)
    seen = run_node(node, WEBRTC_SCRIPT, "webrtc audio turn", llm, shared_components, tmp_path)
    kinds = [e["type"] for e in seen["received"]]
    assert "session.input_transcript.delta" in kinds
    assert kinds.index("session.input_transcript.delta") < kinds.index(
        "session.output_transcript.delta"
    )
