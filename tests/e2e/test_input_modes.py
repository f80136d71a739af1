"""Other ways to speak: push-to-talk with the space bar, an audio file dropped on the page
(decoded by the browser, streamed at real-time pace) or chosen in the file picker, and
files the page cannot use."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import soundfile as sf
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
    notice,
    played_more_than,
    responses_done,
    session_value,
    user_final,
)


def test_hold_space_to_talk(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    wav = speech_wav(shared_components, tmp_path / "question.wav", [0.5, QUESTION, 1.0])
    seconds = sf.info(str(wav)).duration
    page = open_page(wav)
    connected(page)
    page.check("input[name=mode][value=push-to-talk]")
    expect(session_value(page, "turn")).to_have_attribute("data-key", "none", timeout=TIMEOUT_MS)
    expect(page.locator("#talk")).to_have_text("Hold to talk")

    page.keyboard.down("Space")
    expect(page.locator("#talk")).to_have_text("Release to send")
    expect(page.locator("#talk")).to_have_attribute("aria-pressed", "true")
    page.wait_for_function("() => window.r1voice.streaming === true", timeout=TIMEOUT_MS)
    time.sleep(seconds + 0.5)  # hold while the fake microphone says the question
    page.wait_for_function("() => document.querySelector('#level').value > 0", timeout=5000)
    snap(page, "holding-space")
    page.keyboard.up("Space")
    expect(page.locator("#talk")).to_have_text("Hold to talk")

    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    played_more_than(page, 0)
    sent = debug(page)["events"]
    assert "input_audio_buffer.committed" in sent, sent
    assert "input_audio_buffer.speech_started" not in sent, "no server VAD in push-to-talk"
    snap(page, "answered")


def test_drop_an_audio_file(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]))
    connected(page)
    question = speech_wav(shared_components, tmp_path / "question.wav", [0.3, QUESTION, 0.3])
    drop_file(page, question.read_bytes(), "question.wav", "audio/wav")
    expect(page.locator("#file-progress")).to_be_visible()
    expect(page.locator("#file-progress")).to_contain_text("question.wav")
    snap(page, "sending-file")
    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    played_more_than(page, 0)
    expect(page.locator("#file-progress")).to_be_hidden(timeout=TIMEOUT_MS)
    snap(page, "answered")

    # the file picker is the same path (a FLAC this time)
    flac = tmp_path / "again.flac"
    data, rate = sf.read(str(question), dtype="float32")
    sf.write(str(flac), data, rate, format="FLAC")
    page.set_input_files("#file", str(flac))
    expect(user_final(page, HEARD)).to_have_count(2, timeout=TIMEOUT_MS)
    responses_done(page, 2)


def test_files_the_page_cannot_use(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]))
    connected(page)
    drop_file(page, b"just some notes", "notes.txt", "text/plain")
    expect(notice(page, "file")).to_contain_text("not an audio file")
    drop_file(page, b"RIFF....WAVEbroken" * 10, "broken.wav", "audio/wav")
    expect(notice(page, "file")).to_contain_text("could not decode", timeout=TIMEOUT_MS)
    snap(page, "bad-file")
    notice(page, "file").locator(".dismiss").click()
    expect(notice(page, "file")).to_have_count(0)
    appended = page.evaluate(
        "() => document.querySelectorAll("
        "'#devlog-list li.out[data-type=\"input_audio_buffer.append\"]').length"
    )
    assert appended == 0, "nothing was sent"


def test_stop_mid_sentence_still_ends_the_turn(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    """Hands-free, Stop pressed while the user speaks: the page sends a silence so server
    VAD ends the turn (no stage left "hearing speech" for ever)."""
    wav = speech_wav(
        shared_components,
        tmp_path / "long.wav",
        [0.5, "Tell me a long story about a dragon and a knight, please, with many details.", 3.0],
    )
    page = open_page(wav)
    connected(page)
    page.click("#talk")
    page.wait_for_function(
        "() => window.r1voice.events['input_audio_buffer.speech_started'] >= 1",
        timeout=TIMEOUT_MS,
    )
    page.click("#talk")
    expect(page.locator("#talk")).to_have_text("Talk")
    expect(page.locator(".msg.user:not(.partial)")).to_have_count(1, timeout=TIMEOUT_MS)
    expect(page.locator("#card-input .state")).to_have_text("idle", timeout=TIMEOUT_MS)
    assert debug(page)["events"].get("input_audio_buffer.speech_stopped", 0) >= 1
    snap(page, "stopped")
