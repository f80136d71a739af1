"""The page's session timeline in a real browser: a recorded call (spoken over a real
WebSocket first) is listed, drawn as lanes with its turn's stages, and its recording
plays; the page's own session shows its typed turn live."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.app.recording.test_recorded_call import call, wait_for
from tests.e2e.conftest import ServerHandle, Snapper, speech_wav
from tests.e2e.helpers import QUESTION, TIMEOUT_MS, connected, responses_done


def test_a_recorded_call_plays_back_in_the_timeline_with_its_turn_stages(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    recordings = tmp_path / "recordings"
    server = start_server(shared_components, record_sessions=True, recordings_dir=str(recordings))
    recorded = call(server.address)["session"]["id"]
    wait_for(recordings / f"{recorded}.json")

    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]), server.address)
    connected(page)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    responses_done(page, 1)

    page.click("#timeline summary")
    options = page.locator("#timeline-session option")
    expect(options.first).to_have_text("this session · 1 turns", timeout=TIMEOUT_MS)  # newest
    expect(page.locator("#timeline-svg rect[data-lane=llm]").first).to_be_attached()
    expect(page.locator(f"#timeline-session option[value={recorded}]")).to_contain_text(
        "1 turns · recorded"
    )
    page.select_option("#timeline-session", recorded)
    # a spoken turn: its transcription passes are drawn (the typed one had none)
    expect(page.locator("#timeline-svg rect[data-lane=stt]").first).to_be_attached(
        timeout=TIMEOUT_MS
    )
    for lane in ("speech", "turn", "llm", "tts", "playback"):
        expect(page.locator(f"#timeline-svg rect[data-lane={lane}]").first).to_be_attached()
    snap(page, "timeline")

    page.locator("#timeline-svg rect[data-lane=llm][data-kind=decode]").first.click()
    detail = page.locator("#timeline-turn")
    expect(detail).to_contain_text("Turn 1: ended by")
    expect(detail).to_contain_text("r1voice.llm.decode")
    expect(detail).to_contain_text("r1voice.stt")
    audio = page.locator("#timeline-audio")
    expect(audio).to_be_visible()
    page.wait_for_function(
        "() => document.querySelector('#timeline-audio').duration > 1", timeout=TIMEOUT_MS
    )
    snap(page, "turn")
