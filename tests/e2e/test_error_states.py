"""What a person sees when something goes wrong, and the way out each time: microphone
denied or missing, the server busy, the server still warming up, the socket lost (the
page reconnects with backoff and keeps the conversation on screen), a server that wants
an API key."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, WebSocketRoute, expect

from app.llm import LLMBusyError
from tests.e2e.conftest import ServerHandle, Snapper, speech_wav
from tests.e2e.helpers import (
    QUESTION,
    TIMEOUT_MS,
    assistant,
    connected,
    notice,
    responses_done,
    session_value,
)

# What Chromium logs for a refused WebSocket handshake, and the readiness probe's 503.
REFUSED_HANDSHAKE = (
    r"WebSocket connection to .* failed",
    r"HTTP 503 for .*/v2/health/ready",
    r"Failed to load resource: .* 503",
)


class BusyOnceLLM:
    """The real LLM, except that its first request is refused as busy."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    async def stream_chat(
        self, messages: Any, params: Any, request_id: str
    ) -> AsyncGenerator[Any, None]:
        self.calls += 1
        if self.calls == 1:
            raise LLMBusyError("the engine's waiting queue is full; retry shortly", retry_after_s=1)
        async for delta in self._llm.stream_chat(messages, params, request_id):
            yield delta


def test_microphone_denied(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "q.wav", [1.0]), grant_mic=False)
    connected(page)
    page.click("#talk")
    denied = notice(page, "mic-denied")
    expect(denied).to_contain_text("denied", timeout=TIMEOUT_MS)
    expect(denied).to_contain_text("type or drop an audio file")
    expect(denied).to_have_attribute("role", "alert")
    expect(denied.locator("button.action")).to_have_text("Retry")
    expect(page.locator("#talk")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#card-input .state")).to_have_text("idle")
    snap(page, "denied")
    denied.locator("button.action").click()  # still denied: the message comes back
    expect(notice(page, "mic-denied")).to_have_count(1, timeout=TIMEOUT_MS)
    # typing still works
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)


def test_no_microphone(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "q.wav", [1.0]), fake_mic=False)
    connected(page)
    page.click("#talk")
    missing = page.locator('.notice[data-kind^="mic-"]')
    expect(missing).to_contain_text("microphone", timeout=TIMEOUT_MS)
    expect(missing.locator("button.action")).to_have_text("Retry")
    snap(page, "no-microphone")


def test_server_busy(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    llm = BusyOnceLLM(shared_components.llm)
    server = start_server(dataclasses.replace(shared_components, llm=llm))
    page = open_page(speech_wav(shared_components, tmp_path / "q.wav", [1.0]), server.address)
    connected(page)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    busy = notice(page, "server-busy")
    expect(busy).to_contain_text("busy", timeout=TIMEOUT_MS)
    expect(busy).to_contain_text("Try again")
    snap(page, "busy")
    busy.locator("button.action").click()
    expect(busy).to_have_count(0)
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 2)
    assert llm.calls == 2


def test_server_not_ready_then_connects(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    server = start_server(shared_components, ready=False)  # warming up: handshakes refused
    page = open_page(
        speech_wav(shared_components, tmp_path / "q.wav", [1.0]),
        server.address,
        expect_errors=REFUSED_HANDSHAKE,
    )
    warming = notice(page, "not-ready")
    expect(warming).to_contain_text("starting up", timeout=TIMEOUT_MS)
    expect(warming).to_contain_text("Reconnecting in")
    expect(page.locator("#talk")).to_be_disabled()
    snap(page, "not-ready")
    server.state.ready = True  # warm-up done: the next attempt connects
    connected(page)
    expect(notice(page, "not-ready")).to_have_count(0)


def test_lost_socket_reconnects_and_keeps_the_conversation(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    sockets: list[WebSocketRoute] = []

    def through(ws: WebSocketRoute) -> None:  # the real server, with a hand on the socket
        ws.connect_to_server()
        sockets.append(ws)

    page = open_page(
        speech_wav(shared_components, tmp_path / "q.wav", [1.0]),
        before_load=lambda p: p.route_web_socket("**/v1/realtime**", through),
    )
    connected(page)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)

    page.click('.component[data-slot="tts"][data-key="espeak-ng"]')  # a choice to keep
    expect(session_value(page, "tts")).to_have_attribute(
        "data-key", "espeak-ng", timeout=TIMEOUT_MS
    )

    sockets[-1].close(code=1011, reason="network went away")
    lost = notice(page, "connection")
    expect(lost).to_contain_text("Lost the connection", timeout=TIMEOUT_MS)
    expect(lost).to_contain_text("the conversation stays on screen")
    snap(page, "lost")
    connected(page)  # reconnected by itself (backoff)
    expect(notice(page, "connection")).to_have_count(0)
    assert len(sockets) == 2
    expect(page.locator(".divider")).to_contain_text("Reconnected")
    expect(page.locator(".msg.user", has_text=QUESTION)).to_have_count(1)
    expect(assistant(page, "paris").first).to_be_visible()
    # the new session got the user's choice again
    page.wait_for_function("() => window.r1voice.sessions === 2", timeout=TIMEOUT_MS)
    expect(session_value(page, "tts")).to_have_attribute(
        "data-key", "espeak-ng", timeout=TIMEOUT_MS
    )
    # and it answers
    page.fill("#text", "Say hello.")
    page.click("#text-form button[type=submit]")
    responses_done(page, 2)
    snap(page, "reconnected")


def test_a_server_with_an_api_key_asks_for_it_then_connects(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    server = start_server(shared_components, api_key="sk-page-test")
    page = open_page(
        speech_wav(shared_components, tmp_path / "q.wav", [1.0]),
        server.address,
        expect_errors=(r"WebSocket connection to .* failed", r".* 401"),
    )
    ask = notice(page, "api-key")
    expect(ask).to_contain_text("needs an API key", timeout=TIMEOUT_MS)
    snap(page, "api-key")
    page.fill("#api-key", "sk-wrong")
    ask.locator("button.action").click()
    expect(notice(page, "api-key")).to_contain_text("refused", timeout=TIMEOUT_MS)
    page.fill("#api-key", "sk-page-test")
    page.press("#api-key", "Enter")
    connected(page)
    expect(notice(page, "api-key")).to_have_count(0)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    # the key itself never went into the handshake: only a short-lived client secret
    assert "sk-page-test" not in page.evaluate("() => JSON.stringify(window.r1voice)")
