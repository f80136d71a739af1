"""OpenAI's Agents SDK for JavaScript, its WebRTC transport (`OpenAIRealtimeWebRTC` from
@openai/agents-realtime, the npm package under tests/clients/node), in headless Chromium
against r1voice's `POST /v1/realtime/calls`: the SDK's own offer, data channel and
session.update handshake; a spoken turn from Chromium's fake microphone (a recording)
answered with audio on the remote track; the SDK's `interrupt()` (response.cancel +
output_audio_buffer.clear) stopping the answer. Unchanged SDK code: the test only points
its `baseUrl` at the server."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from playwright.sync_api import Playwright, Route

from tests.conftest import load_clip
from tests.e2e.conftest import WAV_RATE, chromium_args

BUNDLE = (
    Path(__file__).resolve().parents[1]
    / "clients/node/node_modules/@openai/agents-realtime/dist/bundle"
)

CONNECT = """async (base) => {
  const { OpenAIRealtimeWebRTC } = await import('/__agents/openai-realtime-agents.mjs');
  const audioElement = document.createElement('audio');
  document.body.appendChild(audioElement);
  const transport = new OpenAIRealtimeWebRTC({
    baseUrl: base + '/v1/realtime/calls', audioElement, useInsecureApiKey: true });
  const rtc = window.__rtc = { transport, events: [], types: [] };
  transport.on('*', (event) => { rtc.events.push(event); rtc.types.push(event.type); });
  transport.on('error', (error) => { rtc.errors = [...(rtc.errors || []), JSON.stringify(error?.error ?? String(error))]; });
  await transport.connect({ apiKey: 'unused', model: 'r1voice' });
  rtc.callId = transport.callId;
  return transport.status;
}"""

AUDIO_RECEIVED = """async () => {
  const stats = await window.__rtc.transport.connectionState.peerConnection.getStats();
  let energy = 0;
  stats.forEach((s) => { if (s.type === 'inbound-rtp' && s.kind === 'audio') energy += s.totalAudioEnergy || 0; });
  return energy;
}"""


def _retrieve_of_deleted(event: dict[str, Any], deleted: set[str]) -> bool:
    """An `item_not_found` error for an item the server had deleted."""
    error = event.get("error", {})
    named = re.search(r"id '([^']+)'", error.get("message", ""))
    return error.get("code") == "item_not_found" and bool(named) and named.group(1) in deleted  # type: ignore[union-attr]


def _wait_for_type(page: Any, kind: str, after: int = 0, timeout_ms: int = 180_000) -> int:
    """Wait for an event of `kind` past the `after`-th; its index."""
    page.wait_for_function(
        "([kind, after]) => window.__rtc.types.indexOf(kind, after) >= 0",
        arg=[kind, after],
        timeout=timeout_ms,
    )
    return int(page.evaluate("([k, a]) => window.__rtc.types.indexOf(k, a)", [kind, after]))


@pytest.mark.timeout(400)
def test_agents_sdk_webrtc_transport_in_chromium(
    playwright_driver: Playwright, start_server: Any, shared_components: Any, tmp_path: Path
) -> None:
    if not (BUNDLE / "openai-realtime-agents.mjs").is_file():
        pytest.skip("npm packages missing: run `make test` (npm ci --prefix tests/clients/node)")
    speech = load_clip("jfk.flac", WAV_RATE)
    wav = tmp_path / "jfk.wav"  # Chromium's fake microphone loops it: a long silence after
    sf.write(str(wav), np.concatenate([speech, np.zeros(WAV_RATE * 90, np.float32)]), WAV_RATE)
    server = start_server(shared_components)
    base = f"http://{server.address}"
    browser = playwright_driver.chromium.launch(
        executable_path="/usr/bin/chromium", args=chromium_args(wav)
    )
    try:
        page = browser.new_page()

        def bundle(route: Route) -> None:
            name = route.request.url.rsplit("/", 1)[-1]
            route.fulfill(path=str(BUNDLE / name), content_type="text/javascript")

        page.route("**/__agents/*", bundle)
        page.goto(f"{base}/v2/health/live")  # a same-origin document (the call's fetch)
        assert page.evaluate(CONNECT, base) == "connected"
        assert page.evaluate("window.__rtc.callId").startswith("rtc_")
        types = page.evaluate("window.__rtc.types")
        assert types[:2] == ["session.created", "session.updated"], types

        # the fake microphone's recording: heard, transcribed, answered over RTP
        done = _wait_for_type(page, "output_audio_buffer.stopped")
        events = page.evaluate("window.__rtc.events")[: done + 1]
        heard = " ".join(
            e["transcript"]
            for e in events
            if e["type"] == "conversation.item.input_audio_transcription.completed"
        )
        assert "what your country can do for you" in heard.lower().replace(",", ""), heard
        kinds = [e["type"] for e in events]
        assert "response.output_audio.delta" not in kinds  # audio is on the track
        assert "output_audio_buffer.started" in kinds and "response.done" in kinds
        assert page.evaluate(AUDIO_RECEIVED) > 0

        # a typed turn with a long answer, interrupted by the SDK while it plays
        page.evaluate(
            """() => {
              const t = window.__rtc.transport;
              t.sendEvent({type: 'conversation.item.create', item: {type: 'message',
                role: 'user', content: [{type: 'input_text',
                text: 'Tell me a long story about a dragon and a knight.'}]}});
              t.sendEvent({type: 'response.create'});
            }"""
        )
        started = _wait_for_type(page, "output_audio_buffer.started", done + 1)
        page.evaluate("() => window.__rtc.transport.interrupt()")
        cleared = _wait_for_type(page, "output_audio_buffer.cleared", started)
        finished = _wait_for_type(page, "response.done", started)
        last = page.evaluate("(i) => window.__rtc.events[i]", finished)
        assert last["response"]["status"] == "cancelled", last["response"]
        assert cleared > started
        # The SDK retrieves each transcribed item; one the server merged into the next turn
        # (JFK's pause) was deleted by then (conversation.item.deleted): that retrieve is
        # refused, as over the WebSocket. Nothing else may fail.
        events = page.evaluate("window.__rtc.events")
        deleted = {e["item_id"] for e in events if e["type"] == "conversation.item.deleted"}
        errors = [json.loads(e) for e in page.evaluate("window.__rtc.errors || []")]
        unexpected = [e for e in errors if not _retrieve_of_deleted(e, deleted)]
        assert not unexpected, unexpected
        page.evaluate("() => window.__rtc.transport.close()")
    finally:
        browser.close()
    state = server.state
    deadline = time.monotonic() + 30
    while (len(state.peers) or state.sessions) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(state.peers) == 0 and not state.sessions
