"""The page over GPT-Live with server delegation (Settings › GPT-Live delegation: a model
of this server): the live model (scripted) delegates the spoken question, the backend
model (scripted) works it out, and the delegation shows in the conversation and on the
timeline, created and done, with the conclusion spoken."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from app.llm.catalog import LLMCatalog
from tests.e2e.conftest import ServerHandle, Snapper, speech_wav
from tests.e2e.helpers import HEARD, QUESTION, TIMEOUT_MS, assistant, connected, debug, user_final
from tests.e2e.test_page_live import DELEGATE, LIVE, WAIT
from tests.fakes import ScriptedLLM

BACKEND = "qwen2.5-coder-1.5b-instruct"
CONCLUSION = ["<think>France's capital.</think>", "It is Paris."]


def test_a_server_delegation_runs_on_the_backend_model_and_shows_on_the_timeline(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    live_model = ScriptedLLM([DELEGATE, WAIT, ["Paris", ", it is."]])
    backend = ScriptedLLM([CONCLUSION])
    llms = LLMCatalog(live_model, load=lambda _name: backend)
    server = start_server(dataclasses.replace(shared_components, llm=live_model, llms=llms))
    wav = speech_wav(shared_components, tmp_path / "question.wav", [1.0, QUESTION, 30.0])
    choose = f"{LIVE.split(';')[0]}; localStorage.setItem('r1voice.liveDelegation', '{BACKEND}')"
    page = open_page(wav, server.address, before_load=lambda p: p.add_init_script(choose))
    connected(page)
    page.click("#settings-toggle")  # the drawer names the choice
    expect(page.locator("#live-delegation")).to_have_value(BACKEND)
    page.click("#settings-close")

    page.click("#talk")
    expect(user_final(page, HEARD)).to_be_visible(timeout=TIMEOUT_MS)
    page.click("#talk")
    expect(page.locator(".note.delegation", has_text="Delegated to responses")).to_be_visible(
        timeout=TIMEOUT_MS
    )
    expect(page.locator(".note.delegation", has_text="Delegation done")).to_be_visible(
        timeout=TIMEOUT_MS
    )
    expect(assistant(page, re.compile(r"Paris", re.I))).to_be_visible(timeout=TIMEOUT_MS)
    state = debug(page)
    changes = [(d["change"], d["target"]) for d in state["delegations"]]
    assert changes[0] == ("created", "responses")
    assert ("done", "responses") in changes
    (task,) = backend.prompts  # the backend got the task, the live model its conclusion
    assert task[-1].content == "Find the capital."
    assert not any("It is Paris." in m.content for m in live_model.prompts[-1])  # said as is

    page.click("#timeline summary")
    bar = page.locator("#timeline-svg rect[data-lane=delegation][data-kind=delegation]")
    expect(bar).to_have_count(1, timeout=TIMEOUT_MS)
    snap(page, "server-delegation")
