"""The page over GPT-Live in a real browser (Settings › Protocol: GPT-Live, kept in
localStorage): it opens /v1/live/sessions, starts the session with its delegation, streams
the fake microphone, shows the user's words and the answer and plays its audio; the live
model (scripted: real VAD, ASR and TTS) delegates the question, and the test, as the
application's sideband, answers the delegation with thinking and commentary, which the
conversation and the timeline show at their times."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect
from websockets.sync.client import connect

from tests.e2e.conftest import ServerHandle, Snapper, speech_wav
from tests.e2e.helpers import (
    HEARD,
    QUESTION,
    TIMEOUT_MS,
    assistant,
    connected,
    debug,
    drop_file,
    user_final,
)
from tests.fakes import ScriptedLLM

DELEGATE = [
    '<tool_call>{"name": "delegate", "arguments": {"task": "Find the capital."}}</tool_call>'
]
WAIT = ["Let me look ", "into that."]
ANSWER = ["The capital ", "is Paris."]
LIVE = "localStorage.setItem('r1voice.protocol', 'live'); localStorage.setItem('r1voice.liveDelegation', 'client')"


def answer_delegation(address: str, session_id: str, delegation_id: str) -> list[str]:
    """The application's sideband: thinking, then the commentary that finishes the task;
    returns the types of the events it saw."""
    seen: list[str] = []
    with connect(f"ws://{address}/v1/live/sessions/{session_id}/attach") as sideband:

        def until(kind: str) -> None:
            while kind not in seen:
                seen.append(json.loads(sideband.recv(timeout=TIMEOUT_MS / 1000))["type"])

        for kind, content in (
            ("thinking", "Paris is the capital."),
            ("commentary", "It is Paris."),
        ):
            append = {"type": f"session.{kind}.append", "content": content}
            sideband.send(json.dumps({**append, "delegation_id": delegation_id}))
            until(f"session.{kind}.appended")
    return seen


def test_the_page_talks_over_live_and_shows_the_delegation_on_its_timeline(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    live_model = ScriptedLLM([DELEGATE, WAIT, ANSWER])
    server = start_server(dataclasses.replace(shared_components, llm=live_model))
    wav = speech_wav(shared_components, tmp_path / "question.wav", [1.0, QUESTION, 30.0])
    page = open_page(wav, server.address, before_load=lambda p: p.add_init_script(LIVE))
    connected(page)
    assert debug(page)["transport"] == "websocket"
    assert debug(page)["events"]["session.created"] == 1  # the page's name for session.started

    page.click("#talk")
    expect(user_final(page, HEARD)).to_be_visible(timeout=TIMEOUT_MS)
    page.click("#talk")  # Talk off: the session hears the microphone muted
    delegated = page.locator(".note.delegation", has_text="Delegated to client")
    expect(delegated).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page, re.compile(r"look into", re.I))).to_be_visible(timeout=TIMEOUT_MS)
    snap(page, "delegated")

    state = debug(page)
    (created,) = state["delegations"]
    assert (created["change"], created["target"], created["done"]) == ("created", "client", None)
    seen = answer_delegation(server.address, state["session"]["id"], created["id"])
    assert seen.index("session.thinking.appended") < seen.index("session.commentary.appended")

    expect(assistant(page, re.compile(r"Paris", re.I))).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".note.delegation", has_text="Delegation done")).to_be_visible()
    page.wait_for_function("() => window.r1voice.played > 24000", timeout=TIMEOUT_MS)
    state = debug(page)
    changes = [d["change"] for d in state["delegations"]]
    assert changes == ["created", "thinking", "commentary", "done"]
    done = state["delegations"][-1]
    assert created["created"] <= done["thinking"][0] <= done["commentary"] == done["done"]
    assert state["events"]["session.input_audio.muted"] == 1
    assert "error" not in state["events"]
    assert len(live_model.prompts) == 3  # the question, the acknowledgement, the commentary
    # the event log lists Live's own events as they went over the wire
    logged = page.locator("#devlog-list li")
    for direction, kind in [
        ("out", "session.start"),
        ("out", "session.input_audio.append"),
        ("in", "session.started"),
        ("in", "session.delegation.created"),
        ("in", "session.output_audio.delta"),
    ]:
        expect(
            logged.and_(page.locator(f'[data-dir="{direction}"][data-type="{kind}"]')).first
        ).to_be_attached()
    assert logged.and_(page.locator('[data-type="session.created"]')).count() == 0

    page.click("#timeline summary")
    lane = page.locator("#timeline-svg rect[data-lane=delegation]")
    expect(lane.and_(page.locator("[data-kind=delegation]"))).to_have_count(1, timeout=TIMEOUT_MS)
    expect(lane.and_(page.locator("[data-kind=thinking]"))).to_have_count(1)
    expect(lane.and_(page.locator("[data-kind=commentary]"))).to_have_count(1)
    expect(page.locator("#timeline-svg rect[data-lane=llm]").first).to_be_attached()
    snap(page, "timeline")


# Keeps the page's peer connections, to read what their audio tracks received.
KEEP_PEERS = """
window.__peers = [];
const Peer = window.RTCPeerConnection;
window.RTCPeerConnection = class extends Peer {
  constructor(...args) { super(...args); window.__peers.push(this); }
};
"""
RECEIVED_ENERGY = """async () => {
  let energy = 0;
  for (const pc of window.__peers) {
    (await pc.getStats()).forEach((s) => {
      if (s.type === "inbound-rtp" && s.kind === "audio") energy += s.totalAudioEnergy || 0;
    });
  }
  return energy;
}"""


def test_the_page_talks_over_live_on_webrtc(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    server = start_server(dataclasses.replace(shared_components, llm=ScriptedLLM(ANSWER)))
    wav = speech_wav(shared_components, tmp_path / "question.wav", [1.0, QUESTION, 30.0])

    def before(page: Page) -> None:
        page.add_init_script("localStorage.setItem('r1voice.protocol', 'live')")
        page.add_init_script(KEEP_PEERS)

    page = open_page(wav, server.address, transport="auto", before_load=before)
    connected(page)
    assert debug(page)["transport"] == "webrtc"
    page.click("#talk")
    expect(user_final(page, HEARD)).to_be_visible(timeout=TIMEOUT_MS)
    expect(assistant(page, re.compile(r"Paris", re.I))).to_be_visible(timeout=TIMEOUT_MS)
    page.click("#talk")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while page.evaluate(RECEIVED_ENERGY) == 0:  # the answer's audio came on the track
        assert time.monotonic() < deadline, "no answer audio on the session's track"
        page.wait_for_timeout(200)
    state = debug(page)
    assert state["audioDeltas"] == 0, "the answer played from the session's track"
    assert state["events"]["session.input_audio.muted"] == 1
    assert "error" not in state["events"]
    snap(page, "answered-over-webrtc")


STORY = [
    "Once upon a time a dragon lived high in the mountains above a quiet village. ",
    "Every spring a young knight climbed the long path to visit the dragon and talk. ",
    "They spoke of rivers and stars, of old kings and forgotten roads, for many hours. ",
    "The villagers watched the mountain and wondered what the two friends talked about. ",
]


def test_speaking_over_a_live_answer_interrupts_it(
    open_page: Callable[..., Page],
    start_server: Callable[..., ServerHandle],
    shared_components: Any,
    tmp_path: Path,
    snap: Snapper,
) -> None:
    """A long answer plays; a second question comes in (a dropped file, so that it surely
    comes while the story plays): the page stops playback, marks the story interrupted
    with what was heard, and shows the second answer."""
    server = start_server(dataclasses.replace(shared_components, llm=ScriptedLLM([STORY, ANSWER])))
    ask: list[str | float] = [0.5, "Tell me a story about a dragon.", 90.0]  # no pause within
    wav = speech_wav(shared_components, tmp_path / "story.wav", ask)
    question = speech_wav(shared_components, tmp_path / "question.wav", [0.3, QUESTION, 0.3])
    live = "localStorage.setItem('r1voice.protocol', 'live')"
    page = open_page(wav, server.address, before_load=lambda p: p.add_init_script(live))
    connected(page)
    page.click("#talk")
    expect(user_final(page, "dragon|story").first).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.r1voice.played > 12000", timeout=TIMEOUT_MS)
    drop_file(page, question.read_bytes(), "question.wav", "audio/wav")
    expect(user_final(page, HEARD).first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".msg.assistant.interrupted")).to_have_count(1, timeout=TIMEOUT_MS)
    expect(assistant(page, re.compile(r"Paris", re.I))).to_be_visible(timeout=TIMEOUT_MS)
    snap(page, "interrupted")
    state = debug(page)
    barge_in = [f for f in state["flushes"] if f["reason"] == "speech_started" and f["played"] > 0]
    assert barge_in, state["flushes"]
    assert [r["status"] for r in state["responses"]][:1] == ["cancelled"]
    assert "error" not in state["events"]
