"""Real-browser fixtures: headless Debian Chromium (driven by Playwright) with a fake
microphone that plays a WAV we synthesize, against the live uvicorn server (or a server of
the test's own, with parts replaced: a busy LLM, a TTS that records the voices it used, a
server that is not ready yet)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import uvicorn
from playwright.sync_api import Browser, Error, Page, Playwright, sync_playwright

from tests.conftest import app_with

CHROMIUM = os.environ.get("R1VOICE_CHROMIUM", "/usr/bin/chromium")
WAV_RATE = 48_000
# Where screenshots of each step go (for a look by eye; gitignored).
SCREENSHOT_DIR = Path(
    os.environ.get(
        "R1VOICE_E2E_SCREENSHOTS", Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"
    )
)
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


# What the page showed and counted, saved next to the screenshots (to read a failure).
STATE_FOR_THE_RECORD = """() => ({
  bubbles: [...document.querySelectorAll('.msg, .note, .notice')].map(e => e.className + ': ' + e.textContent),
  debug: window.r1voice,
  log: [...document.querySelectorAll('#devlog-list li')].map(li => li.dataset.dir + ' ' + li.dataset.type + ' ' + (li.folded > 1 ? 'x' + li.folded : '') + (li.dataset.type === 'error' ? JSON.stringify(li.event.error) : '')),
})"""


def chromium_args(wav: Path, *, grant_mic: bool = True, fake_mic: bool = True) -> list[str]:
    args = [
        "--no-sandbox",  # we run as root (CI)
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--autoplay-policy=no-user-gesture-required",
    ]
    if grant_mic:  # otherwise headless Chromium denies the microphone, as a user may
        args.append("--use-fake-ui-for-media-stream")  # grant the microphone without a prompt
    if fake_mic:  # otherwise there is no microphone at all (these machines have none)
        args += [
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={wav}",  # the fake mic plays (and loops) this
        ]
    return args


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


class ServerHandle:
    """A uvicorn server of one test, on a free loopback port, over an app sharing the
    loaded models (`state` is its ServerState: flip `state.ready` to mimic warm-up)."""

    def __init__(self, components: Any, ready: bool = True, **settings: Any) -> None:
        self.app = app_with(components, **settings)
        self.state = self.app.state.server
        self.state.ready = ready
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="uvicorn-e2e")
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def start_server() -> Iterator[Callable[..., ServerHandle]]:
    """start_server(components, ready=True, **settings) -> a server of this test's own."""
    servers: list[ServerHandle] = []

    def start(components: Any, ready: bool = True, **settings: Any) -> ServerHandle:
        servers.append(ServerHandle(components, ready, **settings))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def spy_voices(monkeypatch: pytest.MonkeyPatch, catalog: Any) -> list[str]:
    """Record the voice of every synthesis (what the server used for the answer's audio,
    independent of what the page shows): every TTS call goes through `catalog.backend`."""
    used: list[str] = []
    real = catalog.backend

    def backend(voice: str | None) -> Any:
        used.append(catalog.resolve(voice))
        return real(voice)

    monkeypatch.setattr(catalog, "backend", backend)
    return used


class Snapper:
    """Screenshots of each step of a test, numbered, under SCREENSHOT_DIR/<test>/."""

    def __init__(self, test_name: str) -> None:
        self.dir = SCREENSHOT_DIR / re.sub(r"[^\w.-]+", "_", test_name)
        shutil.rmtree(self.dir, ignore_errors=True)  # only this run's steps
        self.count = 0

    def __call__(self, page: Page, step: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count += 1
        page.screenshot(path=str(self.dir / f"{self.count:02d}-{step}.png"), full_page=True)


@pytest.fixture
def snap(request: Any) -> Snapper:
    return Snapper(request.node.name)


@pytest.fixture
def open_page(
    playwright_driver: Playwright,
    live_server: str,
    snap: Snapper,
    start_server: Callable[..., ServerHandle],  # its servers stop after the pages close
) -> Iterator[Callable[..., Page]]:
    """open_page(wav, server=None, grant_mic=True, fake_mic=True, expect_errors=(),
    locale=None, transport="websocket") -> the page at / in a fresh Chromium whose
    microphone plays `wav` (and whose language is `locale`, e.g. "zh-CN":
    navigator.languages and Accept-Language), over the connection `transport` pins
    ("auto": the page's default, WebRTC in Chromium; test_page_webrtc.py uses it; the
    others pin the WebSocket, whose audio deltas they count).
    Uncaught page errors, console errors and HTTP errors fail the test, except those
    matching a pattern of `expect_errors` (e.g. the refused handshakes of a server still
    warming up)."""
    browsers: list[Browser] = []
    errors: list[str] = []
    pages: list[Page] = []
    allowed: list[re.Pattern[str]] = []

    def record(text: str) -> None:
        if not any(p.search(text) for p in allowed):
            errors.append(text)

    def open_(
        wav: Path,
        server: str | None = None,
        *,
        grant_mic: bool = True,
        fake_mic: bool = True,
        expect_errors: tuple[str, ...] = (),
        before_load: Callable[[Page], None] | None = None,
        locale: str | None = None,
        transport: str = "websocket",
    ) -> Page:
        allowed.extend(re.compile(p) for p in expect_errors)
        try:
            browser = playwright_driver.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=chromium_args(wav, grant_mic=grant_mic, fake_mic=fake_mic),
            )
        except Error as exc:
            pytest.fail(f"could not launch Chromium ({CHROMIUM}): {exc}")
        browsers.append(browser)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, locale=locale)
        page.add_init_script(RECORD_USER_BUBBLES)
        page.add_init_script(f"localStorage.setItem('r1voice.transport', '{transport}')")
        page.on("pageerror", lambda exc: record(str(exc)))
        page.on("console", lambda msg: record(msg.text) if msg.type == "error" else None)
        page.on(
            "response",
            lambda r: record(f"HTTP {r.status} for {r.url}") if r.status >= 400 else None,
        )
        if before_load is not None:
            before_load(page)
        page.goto(f"http://{server or live_server}/")
        pages.append(page)
        return page

    yield open_
    for i, page in enumerate(pages):
        with contextlib.suppress(Error):
            snap(page, "end")
            state = page.evaluate(STATE_FOR_THE_RECORD)
            (snap.dir / f"state-{i}.json").write_text(json.dumps(state, indent=1))
    for browser in browsers:
        browser.close()
    assert not errors, f"errors on the page: {errors}"
