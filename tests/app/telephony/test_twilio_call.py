"""A phone call through the real pipeline: a caller speaking Twilio's media stream
protocol (bench/voice/twilio_caller.py, written from Twilio's documented messages)
streams real speech at real-time pace; the answer comes back as 20 ms mu-law `media`
frames and a `mark`, a key pressed reaches the model, and speech over an answer gets a
`clear` and leaves the answer's item holding what was heard."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import numpy as np
import pytest

from app.audio import encode_audio
from bench.voice.twilio_caller import FRAME_BYTES, RATE, TwilioCaller
from tests.clients.conftest import LONG_ANSWER, serve
from tests.conftest import app_with, load_clip
from tests.fakes import ScriptedLLM

STREAM = "/v1/telephony/twilio/stream"


def _ulaw(samples: np.ndarray) -> bytes:
    return encode_audio(samples, "audio/pcmu")


def _media(message: dict[str, Any]) -> bool:
    return message["event"] == "media" and message["media"]["audible"]


def _session(app: Any) -> Any:
    (session,) = app.state.server.sessions.values()
    return session


@pytest.mark.timeout(600)
def test_a_call_is_heard_answered_and_takes_a_key(shared_components: Any) -> None:
    app = app_with(shared_components)
    question = _ulaw(shared_components.tts.synthesize("What is the capital of France?", RATE))

    async def main(address: str) -> tuple[TwilioCaller, list[Any], list[Any]]:
        caller = await TwilioCaller.open(f"ws://{address}{STREAM}", {"From": "+15550001111"})
        await caller.say(question)
        i, _, _ = await caller.wait_for(_media, 0, 120)
        i, _, mark = await caller.wait_for(lambda m: m["event"] == "mark", i, 120)
        assert mark["mark"]["name"].startswith("resp")  # names the answer it ends
        spoken = [dataclasses.replace(item) for item in _session(app).conversation.items]
        n = len(caller.log)
        await caller.press("5")
        await caller.wait_for(_media, n, 120)  # the key is answered
        await caller.wait_for(lambda m: m["event"] == "mark", n, 120)
        pressed = [dataclasses.replace(item) for item in _session(app).conversation.items]
        await caller.hang_up()
        return caller, spoken, pressed

    with serve(app) as address:
        caller, spoken, pressed = asyncio.run(main(address))
    user, answer = spoken[0], spoken[1]
    assert user.role == "user" and "capital" in (user.text or "").lower()
    assert answer.role == "assistant" and answer.status == "completed" and answer.text
    frames = caller.of("media")
    assert frames and all(m["media"]["bytes"] == FRAME_BYTES for _, m in frames)
    assert all(m["streamSid"] == caller.stream_sid for _, m in caller.log)
    assert caller.of("clear") == []  # nobody talked over it
    # each answer's mark follows its last frame
    events = [m["event"] for _, m in caller.log]
    first_mark = events.index("mark")
    assert "media" not in events[first_mark : first_mark + 1]
    keyed = [item for item in pressed if item.role == "user" and "pressed 5" in (item.text or "")]
    assert len(keyed) == 1
    assert pressed[-1].role == "assistant" and pressed[-1].text
    metrics = app.state.server.metrics.render().decode()
    assert 'r1voice_sessions_total{transport="twilio"} 1.0' in metrics


@pytest.mark.timeout(600)
def test_speech_over_an_answer_clears_it_and_keeps_what_was_heard(
    shared_components: Any,
) -> None:
    llm = ScriptedLLM([LONG_ANSWER])
    app = app_with(dataclasses.replace(shared_components, llm=llm))
    question = _ulaw(shared_components.tts.synthesize("Tell me a long story.", RATE))
    talk_over = _ulaw(load_clip("jfk.flac", RATE)[: 3 * RATE])

    async def main(address: str) -> tuple[int, int, list[Any]]:
        caller = await TwilioCaller.open(f"ws://{address}{STREAM}")
        await caller.say(question)
        i, _, _ = await caller.wait_for(_media, 0, 120)
        for _ in range(50):  # a second of the answer
            i, _, _ = await caller.wait_for(lambda m: m["event"] == "media", i + 1, 30)
        talking_from = len(caller.log)
        await caller.say(talk_over)
        cleared, _, _ = await caller.wait_for(lambda m: m["event"] == "clear", talking_from, 60)
        await caller.wait_for(_media, cleared, 120)  # the speech is answered
        items = [dataclasses.replace(item) for item in _session(app).conversation.items]
        await caller.hang_up()
        return talking_from, cleared, items

    with serve(app) as address:
        talking_from, cleared, items = asyncio.run(main(address))
    assert cleared > talking_from
    answers = [item for item in items if item.role == "assistant"]
    first = answers[0]
    assert first.status == "incomplete"  # cut where the caller spoke over it
    full = "".join(LONG_ANSWER)
    assert first.text and full.startswith(first.text) and len(first.text) < len(full) / 2
    users = [item for item in items if item.role == "user"]
    heard = (users[1].text or "").lower()  # "And so, my fellow Americans"
    assert len(users) == 2 and ("fellow" in heard or "americ" in heard), heard


@pytest.mark.timeout(600)
def test_a_telnyx_call_is_answered_the_same_way(shared_components: Any) -> None:
    app = app_with(shared_components)
    question = _ulaw(shared_components.tts.synthesize("What is the capital of France?", RATE))

    async def main(address: str) -> TwilioCaller:
        caller = await TwilioCaller.open(f"ws://{address}{STREAM}", telnyx=True)
        await caller.say(question)
        i, _, _ = await caller.wait_for(_media, 0, 120)
        await caller.wait_for(lambda m: m["event"] == "mark", i, 120)
        await caller.hang_up()
        return caller

    with serve(app) as address:
        caller = asyncio.run(main(address))
    sent = [m for _, m in caller.log]
    assert sent and all("streamSid" not in m for m in sent)  # Telnyx's shape: no streamSid
    assert all(m["media"]["bytes"] == FRAME_BYTES for _, m in caller.of("media"))
    metrics = app.state.server.metrics.render().decode()
    assert 'r1voice_sessions_total{transport="telnyx"} 1.0' in metrics
