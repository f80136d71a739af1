"""The page in a real browser: headless Chromium, a fake microphone playing synthesized
speech, the live server with real models. Behaviour is checked through the DOM and the
page's `window.r1voice` debug counters (see web/app.js)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.conftest import speech_wav

QUESTION = "What is the capital of France?"
TIMEOUT_MS = 30_000  # generous: two CPU cores run ASR, the LLM and TTS


def _connected(page: Page) -> None:
    expect(page.locator("#status")).to_have_text("connected", timeout=TIMEOUT_MS)
    expect(page.locator("#talk")).to_be_enabled()


def _debug(page: Page) -> dict[str, Any]:
    return page.evaluate("() => window.r1voice")  # type: ignore[no-any-return]


def _user_final(page: Page, pattern: str) -> Any:
    return page.locator(".msg.user:not(.partial)", has_text=re.compile(pattern, re.I))


def _assistant(page: Page, pattern: str) -> Any:
    return page.locator(".msg.assistant", has_text=re.compile(pattern, re.I))


def test_voice_turn(
    open_page: Callable[[Path], Page], shared_components: Any, tmp_path: Path
) -> None:
    wav = speech_wav(shared_components, tmp_path / "question.wav", [0.5, QUESTION, 6.0])
    page = open_page(wav)
    _connected(page)
    page.click("#talk")
    expect(page.locator("#talk")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#talk")).to_have_text("Stop")

    expect(_user_final(page, "capital of france").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(_assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.r1voice.events['response.done'] >= 1", timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.r1voice.played > 0", timeout=TIMEOUT_MS)
    expect(page.locator("#metrics")).to_contain_text("first audio")

    debug = _debug(page)
    assert debug["audioDeltas"] > 0 and debug["audioSamples"] > 0, debug
    assert debug["events"].get("response.audio_transcript.delta", 0) > 0, debug
    # the user bubble was a partial before the final: the "…" placeholder at least (a
    # question this short is over before two Whisper passes agree on any words)
    states = page.evaluate("() => window.__userBubbles")
    partial = [i for i, s in enumerate(states) if "partial" in s["cls"]]
    final = [i for i, s in enumerate(states) if "partial" not in s["cls"]]
    assert partial and final and partial[0] < final[0], states

    page.click("#talk")
    expect(page.locator("#talk")).to_have_text("Talk")


def test_typed_message(
    open_page: Callable[[Path], Page], shared_components: Any, tmp_path: Path
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]))
    _connected(page)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(page.locator("#text")).to_have_value("")
    expect(page.locator(".msg.user", has_text=QUESTION)).to_have_count(1, timeout=TIMEOUT_MS)
    expect(_assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.r1voice.events['response.done'] >= 1", timeout=TIMEOUT_MS)


def test_speaking_over_the_answer_interrupts_it(
    open_page: Callable[[Path], Page], shared_components: Any, tmp_path: Path
) -> None:
    """The fake mic asks for a long story, then, while the story plays, a second question:
    the page flushes playback, marks the story interrupted and shows the second answer."""
    wav = speech_wav(
        shared_components,
        tmp_path / "barge-in.wav",
        [0.5, "Tell me a long story about a dragon and a knight.", 6.0, QUESTION, 8.0],
    )
    page = open_page(wav)
    _connected(page)
    page.click("#talk")
    expect(_user_final(page, "dragon").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(_user_final(page, "capital of france").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".msg.assistant.interrupted")).to_have_count(1, timeout=TIMEOUT_MS)
    expect(_assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.r1voice.events['response.done'] >= 2", timeout=TIMEOUT_MS)
    debug = _debug(page)
    # a barge-in flush came while the story's audio was playing (the first speech_started,
    # for the question itself, flushed an empty player)
    barge_in = [f for f in debug["flushes"] if f["reason"] == "speech_started" and f["played"] > 0]
    assert barge_in, debug["flushes"]
    assert debug["audioDeltas"] > barge_in[0]["audioDeltas"], "no audio for the second answer"
    page.wait_for_function(
        f"() => window.r1voice.played > {barge_in[0]['played']}", timeout=TIMEOUT_MS
    )
    # in order: the story (interrupted), the second question, its answer
    bubbles = page.locator(".msg").evaluate_all(
        "els => els.map(e => e.className + ': ' + e.textContent)"
    )
    story = next(i for i, b in enumerate(bubbles) if "interrupted" in b)
    question = next(i for i, b in enumerate(bubbles) if "capital of france" in b.lower())
    answer = next(i for i, b in enumerate(bubbles) if "paris" in b.lower())
    assert story < question < answer, bubbles
