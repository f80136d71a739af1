"""Swapping pipeline components: real HTML5 drag and drop of palette entries onto stage
cards (Playwright's drag_to: pointer down, moves, up, which Chromium turns into dragstart /
dragover / drop), the keyboard and click alternatives, and refused choices."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from app.catalog import registry
from app.llm.catalog import LLMCatalog
from tests.e2e.conftest import ServerHandle, Snapper, speech_wav, spy_voices
from tests.e2e.helpers import (
    HEARD,
    QUESTION,
    TIMEOUT_MS,
    assistant,
    connected,
    debug,
    drop_file,
    played_more_than,
    responses_done,
    session_value,
    user_final,
)
from tests.fakes import spy_transcriptions

ESPEAK = '.component[data-slot="tts"][data-key="espeak-ng"]'


def test_drag_the_espeak_voice_onto_the_tts_card(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used = spy_voices(monkeypatch, shared_components.tts)
    server = start_server(shared_components)
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]), server.address)
    connected(page)
    default = shared_components.tts.default_name
    expect(session_value(page, "tts")).to_have_attribute("data-key", default)

    # a voice dropped on the wrong card is refused there, and nothing is sent
    page.locator(ESPEAK).drag_to(page.locator("#card-llm"))
    expect(page.locator("#card-llm .refusal")).to_contain_text("TTS card")
    expect(session_value(page, "tts")).to_have_attribute("data-key", default)

    page.locator(ESPEAK).drag_to(page.locator("#card-tts"))
    expect(session_value(page, "tts")).to_have_attribute(
        "data-key", "espeak-ng", timeout=TIMEOUT_MS
    )
    expect(page.locator(ESPEAK)).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#announce")).to_contain_text("espeak-ng")
    assert debug(page)["session"]["voice"] == "espeak-ng"  # as session.updated confirmed
    snap(page, "dropped")
    sent = page.evaluate(
        "() => [...document.querySelectorAll('#devlog-list li.out[data-type=\"session.update\"]')]"
        ".map(li => li.event.session)"
    )
    assert sent == [{"type": "realtime", "audio": {"output": {"voice": "espeak-ng"}}}], sent

    # the next answer's audio comes from espeak-ng (the server's TTS calls say so)
    before = len(used)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    played_more_than(page, 0)
    answer_voices = set(used[before:])
    assert answer_voices == {"espeak-ng"}, used
    assert debug(page)["responses"][-1]["voice"] == "espeak-ng"
    expect(page.locator(".msg.assistant .meta").last).to_contain_text("espeak-ng")
    snap(page, "answered-with-espeak")


def test_drag_an_asr_model_onto_the_input_card(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """whisper-base dropped on the input card loads on the server; the next utterance is
    transcribed by it (the server's Whisper calls say so)."""
    used = spy_transcriptions(monkeypatch)
    server = start_server(shared_components)
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]), server.address)
    connected(page)
    base = page.locator('.component[data-slot="asr"][data-key="whisper-base"]')
    base.drag_to(page.locator("#card-tts"))  # the wrong card: refused there
    expect(page.locator("#card-tts .refusal")).to_contain_text("INPUT card")
    base.drag_to(page.locator("#card-input"))
    expect(session_value(page, "asr")).to_have_attribute(
        "data-key", "whisper-base", timeout=TIMEOUT_MS
    )
    expect(session_value(page, "asr")).not_to_have_class("pending", timeout=TIMEOUT_MS)
    expect(base).to_have_attribute("aria-pressed", "true")
    assert debug(page)["session"]["transcriptionModel"] == "whisper-base"
    snap(page, "dropped")

    before = len(used)
    question = speech_wav(shared_components, tmp_path / "question.wav", [0.3, QUESTION, 0.3])
    drop_file(page, question.read_bytes(), "question.wav", "audio/wav")
    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    assert used[before:] and set(used[before:]) == {"whisper-base"}, used
    snap(page, "heard-by-whisper-base")


def _add_to_palette(slot: str, entry: dict[str, Any]) -> Callable[[Page], None]:
    """Route the components endpoint through the page, with `entry` added to `slot`."""

    def add(route: Route) -> None:
        response = route.fetch()
        body = response.json()
        body[slot].append(entry)
        route.fulfill(response=response, body=json.dumps(body))

    return lambda page: page.route("**/v1/r1voice/components", add)


def test_keyboard_and_click_alternatives(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    missing = "model 'whisper-large' is not prepared: run `r1voice models prepare whisper-large`"
    page = open_page(
        speech_wav(shared_components, tmp_path / "silence.wav", [1.0]),
        before_load=_add_to_palette(
            "asr",
            {
                "id": "whisper-large",
                "label": "whisper-large",
                "available": False,
                "reason": missing,
            },
        ),
    )
    connected(page)

    # "Change…" on a card moves focus to its palette's active entry (the default turn
    # detection, semantic_vad); Enter on an entry uses it
    page.locator("#card-input .change").focus()
    page.keyboard.press("Enter")
    focused = page.evaluate("() => document.activeElement.dataset.key")
    assert focused == "semantic_vad", focused
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("() => document.activeElement.dataset.key") == "none"
    page.keyboard.press("Enter")
    expect(session_value(page, "turn")).to_have_attribute("data-key", "none", timeout=TIMEOUT_MS)
    assert debug(page)["session"]["turnDetection"] is None
    expect(page.locator("input[name=mode][value=push-to-talk]")).to_be_checked()
    expect(page.locator("#talk")).to_have_text("Hold to talk")
    snap(page, "manual-turns")

    # back to server VAD by dragging it onto the input card
    page.locator('.component[data-slot="turn"][data-key="server_vad"]').drag_to(
        page.locator("#card-input")
    )
    expect(session_value(page, "turn")).to_have_attribute(
        "data-key", "server_vad", timeout=TIMEOUT_MS
    )
    expect(page.locator("#talk")).to_have_text("Talk")

    semantic = page.locator('.component[data-slot="turn"][data-key="semantic_vad"]')
    if semantic.get_attribute("aria-disabled") != "true":  # once the server offers it
        semantic.drag_to(page.locator("#card-input"))
        expect(session_value(page, "turn")).to_have_attribute(
            "data-key", "semantic_vad", timeout=TIMEOUT_MS
        )
        assert debug(page)["session"]["turnDetection"]["type"] == "semantic_vad"
        expect(page.locator("#talk")).to_have_text("Talk")  # hands-free

    # a voice by keyboard: open the espeak-ng languages, pick German
    page.click("#palette-tts details.more summary")
    page.fill("#palette-tts .filter", "german")
    german = page.locator('.component[data-slot="tts"][data-key="espeak-ng:de"]')
    expect(german).to_be_visible()
    german.focus()
    page.keyboard.press("Enter")
    expect(session_value(page, "tts")).to_have_attribute(
        "data-key", "espeak-ng:de", timeout=TIMEOUT_MS
    )
    expect(session_value(page, "tts")).to_have_text("espeak-ng: German")

    # the ASR model by keyboard: whisper-base, then back to the server's model
    loaded = shared_components.asr.name
    expect(session_value(page, "asr")).to_have_attribute("data-key", loaded)
    for model in ("whisper-base", loaded):
        page.locator(f'.component[data-slot="asr"][data-key="{model}"]').focus()
        page.keyboard.press("Enter")
        expect(session_value(page, "asr")).to_have_attribute("data-key", model, timeout=TIMEOUT_MS)
        expect(session_value(page, "asr")).not_to_have_class("pending", timeout=TIMEOUT_MS)
        assert debug(page)["session"]["transcriptionModel"] == model

    # an unavailable component says why, on its card, and changes nothing
    unavailable = page.locator('.component[data-slot="asr"][data-key="whisper-large"]')
    expect(unavailable).to_have_attribute("aria-disabled", "true")
    expect(unavailable).to_have_attribute("draggable", "false")
    expect(unavailable.locator(".reason")).to_contain_text("r1voice models prepare")
    unavailable.focus()  # aria-disabled, yet focusable: Enter explains
    page.keyboard.press("Enter")
    expect(page.locator("#card-input .refusal")).to_contain_text("r1voice models prepare")
    expect(session_value(page, "asr")).to_have_attribute("data-key", loaded)
    snap(page, "keyboard")


def test_a_drop_the_server_refuses_says_why_and_reverts(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    """A palette entry the server does not accept (added to the components list here):
    the server's `error` (param naming the voice) is shown on the card, which keeps the
    voice the server still uses."""
    page = open_page(
        speech_wav(shared_components, tmp_path / "silence.wav", [1.0]),
        before_load=_add_to_palette(
            "tts", {"id": "ghost-voice", "label": "Ghost voice", "available": True, "reason": None}
        ),
    )
    connected(page)
    default = shared_components.tts.default_name
    page.locator('.component[data-key="ghost-voice"]').drag_to(page.locator("#card-tts"))
    expect(page.locator("#card-tts .refusal")).to_contain_text("refused", timeout=TIMEOUT_MS)
    expect(page.locator("#card-tts .refusal")).to_contain_text("ghost-voice")
    expect(session_value(page, "tts")).to_have_attribute("data-key", default)
    expect(session_value(page, "tts")).to_have_text(default)
    expect(page.locator('.component[data-key="ghost-voice"]')).to_have_attribute(
        "aria-pressed", "false"
    )
    snap(page, "refused")


QWEN = "qwen2.5-coder-0.5b-instruct"


def test_drag_the_qwen_llm_onto_the_llm_card(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    """The page's LLM palette: Qwen loads when dropped, session.updated names it, and the
    next answer comes from Qwen's engine, not the default's."""
    if QWEN not in [row.name for row in registry.list_models() if row.state == "ready"]:
        pytest.skip(f"{QWEN} is not prepared (r1voice models prepare {QWEN})")
    catalog = LLMCatalog.from_settings(shared_components.llm, shared_components.settings)
    try:
        components = dataclasses.replace(shared_components, llms=catalog)
        server = start_server(components)
        page = open_page(
            speech_wav(shared_components, tmp_path / "silence.wav", [1.0]), server.address
        )
        connected(page)
        default = shared_components.llm.model
        expect(session_value(page, "llm")).to_have_attribute("data-key", default)

        page.locator(f'.component[data-slot="llm"][data-key="{QWEN}"]').drag_to(
            page.locator("#card-llm")
        )
        expect(session_value(page, "llm")).to_have_attribute("data-key", QWEN, timeout=TIMEOUT_MS)
        qwen = catalog.loaded(QWEN)
        assert qwen is not None
        before = (qwen.stats()["requests"], shared_components.llm.stats()["requests"])
        page.fill("#text", QUESTION)
        page.click("#text-form button[type=submit]")
        responses_done(page, 1)
        expect(assistant(page).first).to_be_visible(timeout=TIMEOUT_MS)
        after = (qwen.stats()["requests"], shared_components.llm.stats()["requests"])
        assert after[0] == before[0] + 1 and after[1] == before[1], (before, after)
        snap(page, "answered-by-qwen")
    finally:  # Playwright's sync API holds this thread's event loop: close on another
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, catalog.close()).result()
