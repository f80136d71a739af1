"""The page in Chinese: a browser whose language is zh-CN gets the Chinese page and a
pipeline that hears and answers Chinese (whisper-base with the language detected per
turn, Qwen, the voice `auto`); Settings switches the page to English without a reload;
an English-only ASR model refuses Chinese speech and the page says why."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from app.catalog import registry
from app.llm.catalog import LLMCatalog
from tests.conftest import SPEECH_DIR
from tests.e2e.conftest import ServerHandle, Snapper, speech_wav
from tests.e2e.helpers import (
    TIMEOUT_MS,
    assistant,
    connected,
    debug,
    drop_file,
    responses_done,
    session_value,
)

QWEN = "qwen2.5-coder-0.5b-instruct"
HAN = re.compile(r"[\u4e00-\u9fff]")
QUESTION_ZH = "中国的首都是哪里？"
# A Mandarin speaker (FunASR's example): "欢迎大家来体验达摩院推出的语音识别模型"
MANDARIN = SPEECH_DIR / "zh" / "funasr_asr_example.wav"


def _ready(name: str) -> None:
    if name not in [row.name for row in registry.list_models() if row.state == "ready"]:
        pytest.skip(f"{name} is not prepared (r1voice models prepare {name})")


@pytest.fixture
def qwen_server(
    shared_components: Any, start_server: Callable[..., ServerHandle]
) -> Iterator[ServerHandle]:
    """A server offering every prepared LLM (Qwen among them) from a catalog of its own,
    closed afterwards (the shared components keep only their default LLM loaded)."""
    _ready(QWEN)
    _ready("whisper-base")
    catalog = LLMCatalog.from_settings(shared_components.llm, shared_components.settings)
    try:
        yield start_server(dataclasses.replace(shared_components, llms=catalog))
    finally:  # Playwright's sync API holds this thread's event loop: close on another
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, catalog.close()).result()


@pytest.fixture
def default_llm_server(
    shared_components: Any, start_server: Callable[..., ServerHandle]
) -> ServerHandle:
    """A server offering only its default LLM (nothing heavy loads for the Chinese page)."""
    _ready("whisper-base")
    catalog = LLMCatalog(shared_components.llm)
    return start_server(dataclasses.replace(shared_components, llms=catalog))


def test_a_chinese_browser_gets_the_chinese_page_and_a_chinese_answer(
    open_page: Callable[..., Page],
    qwen_server: ServerHandle,
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    silence = speech_wav(shared_components, tmp_path / "silence.wav", [1.0])
    page = open_page(silence, qwen_server.address, locale="zh-CN")
    connected(page)
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.locator("#status")).to_have_text("已连接")
    expect(page.locator("#talk")).to_have_text("说话")
    expect(page.locator("#settings-toggle")).to_have_text("设置")
    expect(page.locator("#text")).to_have_attribute("placeholder", "…或输入消息")
    expect(page.locator("#card-llm .state")).to_have_text("空闲")
    page.click("#settings-toggle")
    expect(page.locator("#settings")).to_contain_text("界面语言")
    expect(page.locator("#settings")).to_contain_text("说话语言")
    expect(page.locator("#page-language")).to_have_value("zh-CN")
    expect(page.locator("#s-language")).to_have_value("auto")  # detected per turn
    page.click("#settings-close")

    # opened in Chinese: the page asked for a pipeline that hears and answers Chinese
    expect(session_value(page, "asr")).to_have_attribute(
        "data-key", "whisper-base", timeout=TIMEOUT_MS
    )
    expect(session_value(page, "llm")).to_have_attribute("data-key", QWEN, timeout=TIMEOUT_MS)
    expect(session_value(page, "tts")).to_have_attribute("data-key", "auto", timeout=TIMEOUT_MS)
    assert debug(page)["session"]["transcriptionLanguage"] is None
    snap(page, "chinese-pipeline")

    page.fill("#text", QUESTION_ZH)
    page.click("#text-form button[type=submit]")
    expect(page.locator(".msg.user.typed", has_text=QUESTION_ZH)).to_have_count(1)
    expect(assistant(page, HAN).first).to_be_visible(timeout=TIMEOUT_MS)
    responses_done(page, 1)
    assert debug(page)["responses"][0]["status"] == "completed"
    snap(page, "answered-in-chinese")

    # a spoken Mandarin turn: the input card names the language it was heard in
    if not MANDARIN.is_file():
        pytest.skip(f"{MANDARIN} not present (../shared is missing)")
    # push-to-talk: the file is one turn, committed when sent (no VAD judging its end)
    page.check("input[name=mode][value=push-to-talk]")
    expect(session_value(page, "turn")).to_have_attribute("data-key", "none", timeout=TIMEOUT_MS)
    drop_file(page, MANDARIN.read_bytes(), MANDARIN.name, "audio/wav")
    heard = page.locator("#card-input .heard")
    expect(heard).to_have_text("识别语言：中文", timeout=TIMEOUT_MS)
    expect(heard).to_have_attribute("data-language", "zh")
    responses_done(page, 2)
    snap(page, "heard-mandarin")


def test_settings_switch_the_page_to_english_and_back_without_a_reload(
    open_page: Callable[..., Page],
    default_llm_server: ServerHandle,
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    silence = speech_wav(shared_components, tmp_path / "silence.wav", [1.0])
    page = open_page(silence, default_llm_server.address, locale="zh-CN")
    connected(page)
    expect(page.locator("#talk")).to_have_text("说话")
    # no Qwen on this server: the Chinese defaults ask only for what it has
    expect(session_value(page, "tts")).to_have_attribute("data-key", "auto", timeout=TIMEOUT_MS)
    expect(session_value(page, "asr")).to_have_attribute("data-key", "whisper-base")
    expect(session_value(page, "llm")).to_have_attribute("data-key", shared_components.llm.model)

    page.click("#settings-toggle")
    page.select_option("#page-language", "en")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#talk")).to_have_text("Talk")
    expect(page.locator("#status")).to_have_text("connected")
    expect(page.locator("#settings-toggle")).to_have_text("Settings")
    expect(page.locator("#settings-title")).to_have_text("Session settings")
    expect(page.locator("#settings")).to_contain_text("Speech language")
    expect(page.locator("#text")).to_have_attribute("placeholder", "…or type a message")
    expect(page.locator("#card-input-title")).to_contain_text("Input")
    expect(page.locator("#card-llm .state")).to_have_text("idle")
    expect(page.locator("#palette-input h4").first).to_have_text("Turn detection")
    expect(session_value(page, "tts")).to_have_text("Auto: a voice of the answer's language")
    snap(page, "english")
    # the same connection and session: nothing was reloaded
    state = debug(page)
    assert state["sessions"] == 1 and state["events"]["session.created"] == 1, state["events"]
    assert state["language"] == "en"
    assert page.evaluate("() => localStorage.getItem('r1voice.pageLanguage')") == "en"

    page.select_option("#page-language", "zh-CN")
    expect(page.locator("#talk")).to_have_text("说话")
    expect(session_value(page, "tts")).to_have_text("自动：与回答语言一致的声音")
    expect(page.locator("#palette-input h4").first).to_have_text("轮次检测")
    snap(page, "chinese-again")


def test_an_english_only_model_refuses_chinese_speech_and_the_page_says_why(
    open_page: Callable[..., Page], shared_components: Any, tmp_path: Path, snap: Snapper
) -> None:
    """An English browser keeps the server's defaults (whisper-tiny.en); asking it for
    Chinese speech is refused by name, shown as the page shows errors."""
    page = open_page(speech_wav(shared_components, tmp_path / "silence.wav", [1.0]))
    connected(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(session_value(page, "asr")).to_have_attribute("data-key", "whisper-tiny.en")
    page.click("#settings-toggle")
    page.select_option("#s-language", "zh")
    page.click("#settings-form button[type=submit]")
    error = page.locator(".note.error", has_text="unsupported_language")
    expect(error).to_contain_text("cannot take that language", timeout=TIMEOUT_MS)
    expect(error).to_contain_text("whisper-base")  # the server's word on what to choose
    expect(page.locator("#settings-result")).to_contain_text("Refused")
    # the session kept detecting (English, on this model), and the form shows it
    expect(page.locator("#s-language")).to_have_value("auto")
    snap(page, "refused")
