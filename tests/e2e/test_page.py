"""The page in a real browser: headless Chromium, a fake microphone playing synthesized
speech, the live server with real models. Behaviour is checked through the DOM and the
page's `window.r1voice` debug state (see web/app.js)."""

from __future__ import annotations

import re
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
    drop_file,
    played_more_than,
    responses_done,
    user_final,
)


def test_voice_turn_shows_the_pipeline_at_work(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    # Chromium's fake microphone loops the file: the silence lets a slow CPU finish the
    # answer before the question is asked again (and interrupts it)
    wav = speech_wav(shared_components, tmp_path / "question.wav", [0.5, QUESTION, 15.0])
    page = open_page(wav)
    connected(page)
    snap(page, "connected")
    expect(page.locator("#card-input .state")).to_have_text("idle")
    page.click("#talk")
    expect(page.locator("#talk")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#talk")).to_have_text("Stop")
    expect(page.locator("#card-input .state")).not_to_have_text("idle", timeout=TIMEOUT_MS)

    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    played_more_than(page, 0)
    snap(page, "answered")

    # every stage card shows its latency for the turn, and the chart has the turn's bar
    for card, label in (("input", "transcript"), ("llm", "first token"), ("tts", "first audio")):
        expect(page.locator(f"#card-{card} .latency")).to_have_text(
            re.compile(rf"{label} \+?\d+ ms"), timeout=TIMEOUT_MS
        )
    expect(page.locator("#chart-svg g.bar")).to_have_count(1)
    expect(page.locator("#chart-svg rect[data-stage]").first).to_be_visible()
    expect(page.locator("#metrics")).to_contain_text("first audio")

    state = debug(page)
    assert state["audioDeltas"] > 0 and state["scheduled"] > 0, state
    assert state["events"].get("response.output_audio_transcript.delta", 0) > 0, state["events"]
    assert state["turns"] and state["turns"][0]["speech_stopped_to_first_audio_ms"] is not None
    # the user bubble was a partial before the final: the "…" placeholder at least (a
    # question this short is over before two Whisper passes agree on any words)
    states = page.evaluate("() => window.__userBubbles")
    partial = [i for i, s in enumerate(states) if "partial" in s["cls"]]
    final = [i for i, s in enumerate(states) if "partial" not in s["cls"]]
    assert partial and final and partial[0] < final[0], states

    # the developer view logged both directions, audio elided
    page.click("#devlog summary")
    expect(
        page.locator('#devlog-list li.out[data-type="input_audio_buffer.append"]').first
    ).to_be_attached()
    expect(
        page.locator('#devlog-list li.in[data-type="response.output_audio.delta"]').first
    ).to_be_attached()
    page.fill("#devlog-filter", "session.created")
    expect(page.locator("#devlog-list li:not([hidden])")).to_have_count(1)
    page.locator("#devlog-list li:not([hidden]) summary").click()
    expect(page.locator("#devlog-list li:not([hidden]) pre")).to_contain_text('"session.created"')
    snap(page, "event-log")

    # with the microphone allowed, the list names the devices (the fake one here)
    expect(page.locator("#mic option")).not_to_have_count(1, timeout=TIMEOUT_MS)

    page.click("#talk")
    expect(page.locator("#talk")).to_have_text("Talk")
    expect(page.locator("#card-input .state")).to_have_text("idle", timeout=TIMEOUT_MS)


def test_typed_message_settings_and_copy_config(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]))
    connected(page)
    page.fill("#text", QUESTION)
    page.click("#text-form button[type=submit]")
    expect(page.locator("#text")).to_have_value("")
    expect(page.locator(".msg.user", has_text=QUESTION)).to_have_count(1, timeout=TIMEOUT_MS)
    expect(assistant(page, "paris").first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)

    # the settings drawer changes the session; the server confirms in session.updated
    page.click("#settings-toggle")
    expect(page.locator("#settings")).to_be_visible()
    expect(page.locator("#settings-toggle")).to_have_attribute("aria-expanded", "true")
    page.fill("#s-instructions", "Answer in exactly one short sentence.")
    page.select_option("#s-turn", "server_vad")  # from the default semantic_vad
    page.fill("#s-silence", "700")
    page.locator("#s-speed").fill("1.5")
    snap(page, "settings")
    page.click("#settings-form button[type=submit]")
    page.wait_for_function(
        "() => window.r1voice.session.instructions === 'Answer in exactly one short sentence.'",
        timeout=TIMEOUT_MS,
    )
    view = debug(page)["session"]
    assert view["speed"] == 1.5 and view["turnDetection"]["silence_duration_ms"] == 700, view
    assert view["turnDetection"]["type"] == "server_vad", view
    page.keyboard.press("Escape")
    expect(page.locator("#settings")).to_be_hidden()

    page.click("#copy-config")
    expect(page.locator("#copy-config")).to_have_text(re.compile("Copied|Copy failed"))
    copied = page.evaluate("() => JSON.parse(window.r1voice.copied)")
    assert copied["type"] == "realtime" and copied["audio"]["output"]["speed"] == 1.5, copied


def test_speaking_over_the_answer_interrupts_it(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    """The fake mic asks for a long story; once the story plays, a second question comes
    in (a dropped file, so that it surely comes while the story plays, however slow the
    machine): the page flushes playback, marks the story interrupted and shows the second
    answer."""
    wav = speech_wav(
        shared_components,
        tmp_path / "story.wav",
        [0.5, "Tell me a long story about a dragon and a knight.", 90.0],
    )
    question = speech_wav(shared_components, tmp_path / "question.wav", [0.3, QUESTION, 0.3])
    page = open_page(wav)
    connected(page)
    page.click("#talk")
    expect(user_final(page, "dragon|knight|story").first).to_be_visible(timeout=TIMEOUT_MS)
    played_more_than(page, 12_000)  # half a second of the story was heard
    drop_file(page, question.read_bytes(), "question.wav", "audio/wav")
    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".msg.assistant.interrupted")).to_have_count(1, timeout=TIMEOUT_MS)
    expect(page.locator(".msg.assistant.interrupted .badge")).to_have_text("interrupted")
    responses_done(page, 2)
    snap(page, "interrupted")
    state = debug(page)
    # a barge-in flush came while the story's audio was playing (the first speech_started,
    # for the question itself, flushed an empty player)
    barge_in = [f for f in state["flushes"] if f["reason"] == "speech_started" and f["played"] > 0]
    assert barge_in, state["flushes"]
    assert state["audioDeltas"] > barge_in[0]["audioDeltas"], "no audio for the second answer"
    played_more_than(page, barge_in[0]["played"])
    # in order: the story (interrupted), the second question, its answer
    bubbles = page.locator(".msg").evaluate_all(
        "els => els.map(e => e.className + ': ' + e.textContent)"
    )
    story = next(i for i, b in enumerate(bubbles) if "interrupted" in b)
    question = next(i for i, b in enumerate(bubbles) if HEARD.search(b) and "user" in b)
    answer = max(i for i, b in enumerate(bubbles) if "assistant" in b)
    assert story < question < answer, bubbles


def test_a_backchannel_over_an_answer_is_marked_and_the_answer_plays_on(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path
) -> None:
    """A "yeah" said while the answer plays: the answer pauses, goes on, and ends whole;
    the user bubble says it was a backchannel and the answer's says it resumed."""
    wav = speech_wav(
        shared_components,
        tmp_path / "backchannel.wav",
        [0.5, "Tell me a long story about a dragon and a knight.", 4.5, "Yeah.", 40.0],
    )
    page = open_page(wav)
    connected(page)
    page.click("#talk")
    backchannel = page.locator(".msg.user.backchannel")
    expect(backchannel).to_have_count(1, timeout=TIMEOUT_MS)
    expect(backchannel).to_have_attribute("data-badge", re.compile("backchannel"))
    expect(page.locator(".msg.assistant.resumed")).to_have_count(1)
    responses_done(page, 1)
    done = debug(page)["responses"]
    assert [r["status"] for r in done][:1] in (["completed"], ["incomplete"]), done
    expect(page.locator(".msg.assistant.interrupted")).to_have_count(0)


def test_silence_after_an_answer_gets_a_nudge_when_the_settings_ask_for_it(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path
) -> None:
    """Settings: "speak up after 5 s"; the user asks, then stays silent: the server
    speaks again, and the silent turn is shown as the silence it was."""
    wav = speech_wav(shared_components, tmp_path / "question.wav", [0.5, QUESTION, 60.0])
    page = open_page(wav)
    connected(page)
    page.click("#settings-toggle")
    page.select_option("#s-idle", "5")
    page.click("#settings-form button[type=submit]")
    page.wait_for_function(
        "() => window.r1voice.session.turnDetection.idle_timeout_ms === 5000", timeout=TIMEOUT_MS
    )
    page.keyboard.press("Escape")
    page.click("#talk")
    silent = page.locator(".msg.user.silence")
    expect(silent).to_have_count(1, timeout=TIMEOUT_MS)
    expect(silent).to_have_text(re.compile(r"silent for 5\.\d s"))
    responses_done(page, 2)  # the answer, then the nudge
    assert debug(page)["events"].get("input_audio_buffer.timeout_triggered") == 1
