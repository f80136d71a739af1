"""Speech over an answer, over the real WebSocket with real audio: a backchannel lets the
answer play to its end; a bad `false_interruption_timeout` is refused."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import (
    AudioDelta,
    Interruption,
    ResponseCreated,
    SessionUpdated,
    SpeechStarted,
    TranscriptionCompleted,
)
from tests.conftest import answer_text, ask, is_done, receive_until, stream_audio

COMPLETED = TranscriptionCompleted.TYPE


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def test_an_answer_overlapped_by_a_backchannel_plays_to_its_end(
    app_client: TestClient, shared_components: Any
) -> None:
    """Before, any speech past the barge-in hold cancelled the answer and kept only what
    had been heard; a "yeah" over it now pauses it, and it resumes and ends whole."""
    silence = np.zeros(PROTOCOL_RATE, np.float32)
    yeah = np.concatenate([shared_components.tts.synthesize("Yeah.", PROTOCOL_RATE), silence])
    with app_client.websocket_connect("/v1/realtime?dialect=beta&r1voice_events=1") as ws:
        ws.receive_json()
        ask(ws, "Tell me a long story about a dragon and a knight.")
        events = receive_until(ws, lambda e: e["type"] == AudioDelta.TYPE)
        while sum(e["type"] == AudioDelta.TYPE for e in events) < 10:  # ~1 s played
            events.append(ws.receive_json())
        stream_audio(ws, yeah)
        events += receive_until(ws, is_done)
        if COMPLETED not in [e["type"] for e in events]:
            events += receive_until(ws, lambda e: e["type"] == COMPLETED)
    types = [e["type"] for e in events]
    assert SpeechStarted.TYPE in types  # it was speech over the answer
    heard = next(e for e in events if e["type"] == COMPLETED)["transcript"]
    done = next(e for e in events if is_done(e))["response"]
    # played to its end (`incomplete` at max_output_tokens is an answer spoken whole too)
    assert done["status"] in ("completed", "incomplete"), (heard, done["status_details"])
    kept = done["output"][0]["content"][0]["transcript"]
    assert kept == answer_text(events) and len(_words(kept)) > 10  # the whole answer
    assert types.count(ResponseCreated.TYPE) == 1  # the backchannel is not answered
    verdicts = [e["verdict"] for e in events if e["type"] == Interruption.TYPE]
    assert verdicts == ["wait", "backchannel"], heard


@pytest.mark.parametrize("bad", [0, -1, 11, "1.5", None])
def test_a_bad_false_interruption_timeout_is_refused_naming_the_field(
    app_client: TestClient, bad: Any
) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:
        created = ws.receive_json()["session"]
        update = {"type": "realtime", "r1voice": {"false_interruption_timeout": bad}}
        ws.send_text(json.dumps({"type": "session.update", "session": update}))
        probe = {"type": "realtime"}  # its reply shows the session as the refusal left it
        ws.send_text(json.dumps({"type": "session.update", "session": probe}))
        events = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
    errors = [(e["error"]["code"], e["error"]["param"]) for e in events if e["type"] == "error"]
    assert errors == [("invalid_value", "session.r1voice.false_interruption_timeout")]
    assert [e["type"] for e in events] == ["error", SessionUpdated.TYPE]  # one reply each
    timeout = events[-1]["session"]["r1voice"]["false_interruption_timeout"]
    assert timeout == created["r1voice"]["false_interruption_timeout"] == 1.5


def test_a_false_interruption_timeout_is_taken(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        update = {"type": "realtime", "r1voice": {"false_interruption_timeout": 3}}
        ws.send_text(json.dumps({"type": "session.update", "session": update}))
        events = receive_until(ws, lambda e: e["type"] == SessionUpdated.TYPE)
    assert events[-1]["session"]["r1voice"]["false_interruption_timeout"] == 3


STORY = [
    "Once upon a time a young knight rode out to find the old dragon of the hills. ",
    "He crossed three rivers and a dark forest before he saw its cave. ",
    "The dragon was not angry at all; it only wanted someone to talk to.",
]


@pytest.mark.parametrize("voice", ["piper", "espeak"])
def test_an_uh_huh_over_a_real_socket_lets_the_answer_end_whole(
    shared_components: Any, voice: str
) -> None:
    """A recorded "uh-huh", said over the answer at real-time pace by a client that
    behaves like a microphone (`r1voice bench conversation`'s trial): the answer pauses,
    resumes, plays to its end, and its final item holds the whole text. The barge-in hold
    is 150 ms here: Piper's "Uh-huh." (0.29 s) sits at the default 300 ms hold's edge, and
    a sound shorter than the hold never pauses the answer (which then plays on anyway)."""
    from app.speech.espeak_tts import EspeakTTS
    from bench.conversation.sounds import spoken
    from bench.conversation.trial import overlap_trial
    from tests.clients.conftest import serve
    from tests.conftest import app_with
    from tests.fakes import ScriptedLLM

    tts = shared_components.tts if voice == "piper" else EspeakTTS("en-us")
    uh_huh = spoken("backchannel", voice, tts, "Uh-huh.")
    components = dataclasses.replace(shared_components, llm=ScriptedLLM(STORY))
    with serve(app_with(components, barge_in_hold_ms=150)) as address:
        url = f"ws://{address}/v1/realtime?dialect=beta&r1voice_events=1"
        trial = asyncio.run(overlap_trial(url, uh_huh, "Tell me a story.", 1.5, 200, 60))
    assert trial["overlapped"] and trial["paused"], trial  # it was speech over the answer
    assert trial["status"] == "completed", json.dumps(trial, default=str)
    assert trial["whole"] and trial["kept_chars"] == len("".join(STORY)), trial
    assert trial["verdicts"][0] == "wait" and trial["verdicts"][-1] in ("backchannel", "no_words")
    assert trial["audio_deltas_after_decision"] > 0, trial  # it resumed, and was heard
