"""R1 reasoning over a whole session: a scripted LLM backend emitting `<think>x</think>y`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from app.llm import ChatMessage
from app.protocol.server_events import AudioTranscriptDelta, ReasoningDelta, ResponseDone
from tests.conftest import (
    audio_seconds,
    client_with,
    is_done,
    receive_until,
    respond,
    send_user_text,
)
from tests.fakes import ScriptedLLM


def _turn(components: Any, llm: ScriptedLLM) -> list[dict[str, Any]]:
    client = client_with(dataclasses.replace(components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta&r1voice_events=1") as ws:
        ws.receive_json()
        send_user_text(ws, "What is 2+2?")
        ws.receive_json()
        respond(ws)
        events = receive_until(ws, is_done)
        # the next turn's prompt shows what the conversation kept of the answer
        respond(ws, {"modalities": ["text"]})
        events += receive_until(ws, is_done)
    return events


@pytest.mark.parametrize(
    ("deltas", "opens"),
    [
        (["<thi", "nk>two plus", " two is four</th", "ink>\n\n", "It is four."], False),
        (
            ["\ntwo plus two is four\n</think>", "\n\nIt is four."],
            True,
        ),  # R1-Distill template opens it
    ],
)
def test_reasoning_is_shown_not_spoken(
    shared_components: Any, deltas: list[str], opens: bool
) -> None:
    llm = ScriptedLLM(deltas, opens)
    events = _turn(shared_components, llm)
    first = events[: [e["type"] for e in events].index(ResponseDone.TYPE) + 1]
    reasoning = "".join(e["delta"] for e in first if e["type"] == ReasoningDelta.TYPE)
    spoken = "".join(e["delta"] for e in first if e["type"] == AudioTranscriptDelta.TYPE)
    assert reasoning.strip() == "two plus two is four"
    assert spoken == "It is four."
    assert "think" not in json.dumps([e for e in first if e["type"] != ReasoningDelta.TYPE])
    assert audio_seconds(first) > 0.3  # "It is four." was spoken
    assert llm.prompts[1][-1] == ChatMessage("assistant", "It is four.")


def test_no_think_block_is_all_content(shared_components: Any) -> None:
    events = _turn(shared_components, ScriptedLLM(["It is ", "four."]))
    assert not [e for e in events if e["type"] == ReasoningDelta.TYPE]
    assert "".join(e["delta"] for e in events if e["type"] == AudioTranscriptDelta.TYPE).startswith(
        "It is four."
    )
