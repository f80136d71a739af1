"""Real-browser fixtures: headless Debian Chromium (driven by Playwright) with a fake
microphone that plays a WAV we synthesize, against the live uvicorn server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from playwright.sync_api import Browser, Error, Page, Playwright, sync_playwright

CHROMIUM = os.environ.get("R1VOICE_CHROMIUM", "/usr/bin/chromium")
WAV_RATE = 48_000
# Where to save a screenshot of each page at the end of its test (for a look by eye).
SCREENSHOT_DIR = os.environ.get("R1VOICE_E2E_SCREENSHOTS")
# Records every state user bubbles pass through (class and text, in order), so a test can
# see the partial transcript that the final one replaces.
RECORD_USER_BUBBLES = """
window.__userBubbles = [];
const seen = new Set();
new MutationObserver(() => {
  for (const el of document.querySelectorAll(".msg.user")) {
    const state = { cls: el.className, text: el.textContent };
    const key = JSON.stringify(state);
    if (!seen.has(key)) { seen.add(key); window.__userBubbles.push(state); }
  }
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


def chromium_args(wav: Path) -> list[str]:
    return [
        "--no-sandbox",  # we run as root (CI)
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--use-fake-ui-for-media-stream",  # grant the microphone without a prompt
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",  # the fake mic plays (and loops) this
        "--autoplay-policy=no-user-gesture-required",
    ]


@pytest.fixture(scope="module")  # stopped before other modules' tests run their event loops
def playwright_driver() -> Iterator[Playwright]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: the browser tests need Debian's chromium "
            "(`make install` runs `apt-get install chromium`; R1VOICE_CHROMIUM overrides the path)"
        )
    with sync_playwright() as driver:
        yield driver


def speech_wav(components: Any, path: Path, parts: list[str | float]) -> Path:
    """A 16-bit PCM WAV of spoken sentences (str) and seconds of silence (float)."""
    chunks = [
        np.zeros(int(part * WAV_RATE), np.float32)
        if isinstance(part, float)
        else components.tts.synthesize(part, WAV_RATE)
        for part in parts
    ]
    sf.write(str(path), np.concatenate(chunks), WAV_RATE, subtype="PCM_16")
    return path


@pytest.fixture
def open_page(
    playwright_driver: Playwright, live_server: str, tmp_path: Path, request: Any
) -> Iterator[Callable[[Path], Page]]:
    """open_page(wav) -> the page at / in a fresh Chromium whose microphone plays `wav`.
    Uncaught page errors fail the test."""
    browsers: list[Browser] = []
    errors: list[str] = []
    pages: list[Page] = []

    def open_(wav: Path) -> Page:
        try:
            browser = playwright_driver.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=chromium_args(wav)
            )
        except Error as exc:
            pytest.fail(f"could not launch Chromium ({CHROMIUM}): {exc}")
        browsers.append(browser)
        page = browser.new_page(viewport={"width": 900, "height": 700})
        page.add_init_script(RECORD_USER_BUBBLES)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on(
            "response",
            lambda r: errors.append(f"HTTP {r.status} for {r.url}") if r.status >= 400 else None,
        )
        page.goto(f"http://{live_server}/")
        pages.append(page)
        return page

    yield open_
    if SCREENSHOT_DIR:
        for i, page in enumerate(pages):
            page.screenshot(path=f"{SCREENSHOT_DIR}/{request.node.name}-{i}.png", full_page=True)
    for browser in browsers:
        browser.close()
    assert not errors, f"errors on the page: {errors}"
