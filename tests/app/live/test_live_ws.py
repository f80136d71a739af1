"""GPT-Live's WebSocket at /v1/live/sessions, driven by raw Live events over a real socket
to a real server (real VAD, ASR and TTS; a scripted LLM): the start, a text turn, an
audio turn with its transcripts on the timeline, appends, mute, close, and bad input
refused by name while the session goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.audio import PROTOCOL_RATE
from tests.app.live.conftest import LiveClient, live_connection
from tests.clients.conftest import BARGE_IN_S, SHORT_ANSWER, speech_pcm

pytestmark = pytest.mark.timeout(600)

HEARD = ("and so", "fellow", "americans")  # of "And so, my fellow Americans"
USER_ASKS = [
    {"role": "user", "content": [{"type": "input_text", "text": "The capital of France?"}]}
]


def test_a_text_turn_from_the_initial_history_is_answered_aloud(scripted_live: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            started = await client.start(instructions="Be brief.", input=USER_ASKS)
            # the answer's last words come with the audio they are spoken in
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "Paris" in e["delta"]
            )
            await client.wait_audio(PROTOCOL_RATE)  # half a second of PCM16
            n = await client.send({"type": "session.close", "event_id": "bye"})
            closed = await client.wait("session.closed", after=n)
            await client.closed()
            assert closed["reason"] == "close_requested"
            assert closed["client_event_id"] == "bye"
            assert closed["session"]["id"] == started["session"]["id"]
            return client

    with scripted_live(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.types()[0] == "session.started"
    assert client.types()[-1] == "session.closed"
    started = client.events[0]
    assert started["client_event_id"] == "start_1"
    session = started["session"]
    assert (session["model"], session["status"], session["instructions"]) == (
        "gpt-live-1",
        "active",
        "Be brief.",
    )
    assert session["audio"]["format"] == {"type": "audio/pcm", "rate": PROTOCOL_RATE}
    assert session["input"][0]["content"][0]["text"] == "The capital of France?"
    assert client.of("error") == []
    assert client.said() == "".join(SHORT_ANSWER)
    spans = [(e["start_ms"], e["end_ms"]) for e in client.of("session.output_transcript.delta")]
    assert all(start <= end for start, end in spans)
    assert [s for s, _ in spans] == sorted(s for s, _ in spans)
    assert len(client.audio()) / 2 / PROTOCOL_RATE >= 0.5


def test_an_audio_turn_is_transcribed_on_the_timeline_and_answered(scripted_live: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            await client.start()
            await client.send_audio(speech_pcm(BARGE_IN_S), PROTOCOL_RATE * 2 // 50)
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "Paris" in e["delta"]
            )
            await client.wait("session.usage.updated")
            return client

    with scripted_live(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    assert client.of("error") == []
    heard = client.of("session.input_transcript.delta")
    words = "".join(e["delta"] for e in heard).lower()  # "And so, my fellow Americans"
    assert any(w in words for w in HEARD), words  # a pause may end the turn early
    # the clip starts after half a second of silence; the speech lies within what was sent
    sent_ms = len(speech_pcm(BARGE_IN_S)) / 2 / PROTOCOL_RATE * 1000
    assert all(300 <= e["start_ms"] < e["end_ms"] <= sent_ms for e in heard)
    assert client.said().endswith("".join(SHORT_ANSWER))  # after what a split turn cut
    first_words = client.of("session.output_transcript.delta")[0]
    assert first_words["start_ms"] >= heard[0]["end_ms"]  # the answer follows the question
    (usage, *_) = client.of("session.usage.updated")
    assert 0 < usage["context_window"]["usage_ratio"] < 1
    assert usage["usage"]["seconds"] >= 0


def test_bad_input_is_refused_by_name_and_the_session_goes_on(scripted_live: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            await client.send({"type": "session.input_audio.mute", "event_id": "early"})
            await client.wait("error")
            await client.send({"type": ["session.start"], "event_id": "odd"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "odd")
            await client.send({"type": "session.hello", "event_id": "hi"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "hi")
            bad = {"model": "gpt-live-1", "voice": "marin"}
            await client.send({"type": "session.start", "event_id": "s1", "session": bad})
            await client.wait("error", match=lambda e: e["client_event_id"] == "s1")
            wrong_model = {"model": "gpt-4o"}
            await client.send({"type": "session.start", "event_id": "s2", "session": wrong_model})
            await client.wait("error", match=lambda e: e["client_event_id"] == "s2")
            too_long = {"model": "gpt-live-1", "input": USER_ASKS * 129}
            await client.send({"type": "session.start", "event_id": "s3", "session": too_long})
            await client.wait("error", match=lambda e: e["client_event_id"] == "s3")
            await client.start(audio={"format": {"type": "audio/pcmu", "rate": 8000}})
            await client.send(
                {"type": "session.start", "event_id": "s4", "session": {"model": "gpt-live-1"}}
            )
            await client.wait("error", match=lambda e: e["client_event_id"] == "s4")
            append = {"type": "session.commentary.append", "content": "It is sunny."}
            await client.send({**append, "delegation_id": "deleg_nope", "event_id": "c1"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "c1")
            await client.send({"type": "session.input_audio.mute", "event_id": "m1"})
            await client.send({"type": "session.input_audio.unmute", "event_id": "u1"})
            ask = {
                "type": "session.instructions.append",
                "content": "Speak slowly.",
                "event_id": "i1",
            }
            await client.send(ask)
            await client.wait("session.instructions.appended")
            update = {"delegation": {"type": "client", "acknowledgement_delay_ms": 300}}
            await client.send({"type": "session.update", "session": update, "event_id": "up1"})
            await client.wait("session.updated")
            await client.send({"type": "session.close"})
            await client.closed()
            return client

    with scripted_live(SHORT_ANSWER) as address:
        client = asyncio.run(main(address))
    errors = {e["client_event_id"]: e["error"] for e in client.of("error")}
    assert errors["early"]["code"] == "session_not_started"
    assert (errors["odd"]["code"], errors["odd"]["param"]) == ("invalid_event", "type")
    assert errors["hi"]["code"] == "unknown_event_type"
    assert "session.start" in errors["hi"]["message"]  # it lists the events there are
    assert (errors["s1"]["code"], errors["s1"]["param"]) == ("unknown_parameter", "session.voice")
    assert "voice" in errors["s1"]["message"]
    assert (errors["s2"]["code"], errors["s2"]["param"]) == ("invalid_value", "session.model")
    assert "gpt-live-1" in errors["s2"]["message"]
    assert (errors["s3"]["code"], errors["s3"]["param"]) == ("invalid_value", "session.input")
    assert "128" in errors["s3"]["message"]
    assert errors["s4"]["code"] == "session_already_started"
    assert (errors["c1"]["code"], errors["c1"]["param"]) == (
        "delegation_not_found",
        "delegation_id",
    )
    assert all(e["error"]["client_event_id"] == e["client_event_id"] for e in client.of("error"))
    (started,) = client.of("session.started")
    assert started["session"]["audio"]["format"] == {"type": "audio/pcmu", "rate": 8000}
    assert client.of("session.input_audio.muted")[0]["client_event_id"] == "m1"
    assert client.of("session.input_audio.unmuted")[0]["client_event_id"] == "u1"
    (appended,) = client.of("session.instructions.appended")
    assert appended["client_event_id"] == "i1" and appended["start_ms"] == appended["end_ms"]
    (updated,) = client.of("session.updated")
    assert updated["session"]["delegation"] == update_delegation()
    assert client.types()[-1] == "session.closed"
    assert client.of("session.closed")[0]["reason"] == "close_requested"


def update_delegation() -> dict[str, Any]:
    return {"type": "client", "acknowledgement_delay_ms": 300}


def test_a_session_past_its_maximum_duration_is_closed_as_expired(scripted_live: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            started = await client.start()
            closed = await client.wait("session.closed")
            await client.closed()
            assert closed["session"]["id"] == started["session"]["id"]
            return client

    with scripted_live(SHORT_ANSWER, session_max_s=1) as address:
        client = asyncio.run(main(address))
    (closed,) = client.of("session.closed")
    assert closed["reason"] == "expired"
    assert "client_event_id" not in closed
    assert client.of("error") == []  # the Realtime expiry error is the close here
    assert client.types()[-1] == "session.closed"
