"""The page over WebRTC, its default where the browser has RTCPeerConnection: the
microphone goes out on the call's track while Talk is on, the answer plays from the
remote track (no audio deltas), the server's output_audio_buffer events drive the TTS
card; Settings says which connection is in use and switches to the WebSocket."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.conftest import Snapper, speech_wav
from tests.e2e.helpers import (
    HEARD,
    QUESTION,
    TIMEOUT_MS,
    assistant,
    connected,
    debug,
    responses_done,
    user_final,
)


def test_talk_over_webrtc_then_switch_to_the_websocket(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    wav = speech_wav(shared_components, tmp_path / "question.wav", [0.5, QUESTION, 30.0])
    page = open_page(wav, transport="auto")
    connected(page)
    assert debug(page)["transport"] == "webrtc"
    page.click("#talk")
    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    page.wait_for_function(
        "() => (window.r1voice.events['output_audio_buffer.stopped'] || 0) >= 1",
        timeout=TIMEOUT_MS,
    )
    seen = debug(page)
    assert seen["audioDeltas"] == 0, "the answer played from the call's track"
    assert seen["events"].get("output_audio_buffer.started", 0) >= 1
    page.click("#talk")  # the microphone off
    snap(page, "answered-over-webrtc")

    page.click("#settings-toggle")
    expect(page.locator("#transport-in-use")).to_have_text("In use: WebRTC")
    page.select_option("#page-transport", "websocket")
    expect(page.locator("#transport-in-use")).to_have_text("In use: WebSocket", timeout=TIMEOUT_MS)
    connected(page)
    assert debug(page)["transport"] == "websocket"
    assert page.evaluate("localStorage.getItem('r1voice.transport')") == "websocket"
    snap(page, "switched-to-websocket")
