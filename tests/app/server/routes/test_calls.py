"""WebRTC calls (POST /v1/realtime/calls) against a real uvicorn server with the bundled
models, from a real WebRTC client (aiortc): the offer and answer, events on the
`oai-events` data channel, answers' audio on the remote track, the microphone's audio
turned into turns; and after every call, nothing of it left on the server."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from aiortc import RTCPeerConnection

from app.server.state import ServerState
from tests.app.server.routes.rtc_client import MIC_RATE, RtcClient
from tests.conftest import app_with, load_clip, run_live, user_text_item

CONNECT_TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def rtc_server(shared_components: Any) -> Iterator[tuple[str, ServerState]]:
    app = app_with(shared_components, webrtc_connect_timeout_s=CONNECT_TIMEOUT_S)
    for base in run_live(app):
        yield base, app.state.server


def _open_peer_connections() -> int:
    gc.collect()
    return sum(
        1
        for o in gc.get_objects()
        if type(o) is RTCPeerConnection and o.connectionState != "closed"
    )


def _call_threads() -> set[str]:
    """aiortc's decoder threads (one per receiving track, the server's and the client's)."""
    return {f"{t.name}-{t.ident}" for t in threading.enumerate() if t.name.endswith("-decoder")}


def assert_nothing_left(state: ServerState, threads_before: set[str]) -> None:
    """No call, session, peer connection, thread, LLM request or KV block remains."""
    deadline = time.monotonic() + 30
    llm = state.components.llm if state.components else None

    def clean() -> bool:
        stats = llm.stats() if llm else {}
        return (
            len(state.calls) == 0
            and not state.sessions
            and state.admitting == 0
            and stats.get("num_running", 0) == 0
            and _open_peer_connections() == 0
            and _call_threads() <= threads_before
        )

    while not clean() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(state.calls) == 0 and not state.sessions and state.admitting == 0
    assert _open_peer_connections() == 0
    assert _call_threads() <= threads_before, _call_threads() - threads_before
    if llm is not None:
        stats = llm.stats()
        assert stats.get("num_running", 0) == 0 and stats.get("kv_blocks_used", 0) == 0


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_offer_answered_and_session_created_on_the_data_channel(
    rtc_server: tuple[str, ServerState],
) -> None:
    base, state = rtc_server
    threads = _call_threads()

    async def main() -> None:
        client = RtcClient(base)
        reply = await client.offer()
        assert reply.status_code == 201, reply.text
        assert reply.headers["content-type"].startswith("application/sdp")
        assert reply.text.startswith("v=0")
        assert client.location and client.location.startswith("/v1/realtime/calls/rtc_")
        first = (await client.until(lambda e: True))[0]
        assert first["type"] == "session.created"
        assert first["session"]["type"] == "realtime"  # the GA dialect
        await client.close()

    run(main())
    assert_nothing_left(state, threads)


def test_text_turn_answered_with_events_and_audio(rtc_server: tuple[str, ServerState]) -> None:
    base, state = rtc_server
    threads = _call_threads()

    async def main() -> None:
        client = RtcClient(base)
        assert (await client.offer()).status_code == 201
        await client.until(lambda e: e["type"] == "session.created")
        client.send({"type": "conversation.item.create", "item": user_text_item("Say hello.")})
        client.send({"type": "response.create"})
        got = await client.until(lambda e: e["type"] == "output_audio_buffer.stopped")
        types = [e["type"] for e in got]
        done = next(e for e in got if e["type"] == "response.done")
        assert done["response"]["status"] == "completed"
        transcript = done["response"]["output"][0]["content"][0]["transcript"]
        assert transcript.strip()
        # the audio went over RTP, not the data channel
        assert "response.output_audio.delta" not in types
        assert "response.output_audio_transcript.delta" in types
        started = next(e for e in got if e["type"] == "output_audio_buffer.started")
        assert started["response_id"] == done["response"]["id"]
        assert types.index("output_audio_buffer.started") < types.index(
            "output_audio_buffer.stopped"
        )
        assert client.audible_frames() >= 10  # 200 ms of the answer heard at least
        await client.close()

    run(main())
    assert_nothing_left(state, threads)


def test_spoken_turn_transcribed_and_answered(rtc_server: tuple[str, ServerState]) -> None:
    """A real recording through the microphone track, Opus both ways."""
    base, state = rtc_server
    threads = _call_threads()
    speech = load_clip("jfk.flac", MIC_RATE)

    async def main() -> None:
        client = RtcClient(base)
        assert (await client.offer()).status_code == 201
        await client.until(lambda e: e["type"] == "session.created")
        client.mic.say(speech)
        got = await client.until(lambda e: e["type"] == "output_audio_buffer.stopped")
        types = [e["type"] for e in got]
        assert types.index("input_audio_buffer.speech_started") < types.index(
            "input_audio_buffer.speech_stopped"
        )
        transcripts = [
            e["transcript"]
            for e in got
            if e["type"] == "conversation.item.input_audio_transcription.completed"
        ]
        heard = " ".join(transcripts).lower().replace(",", "")
        assert "ask not what your country can do for you" in heard, transcripts
        done = [e for e in got if e["type"] == "response.done"][-1]
        assert done["response"]["status"] == "completed"
        assert client.audible_frames() >= 10
        await client.close()

    run(main())
    assert_nothing_left(state, threads)


def test_output_audio_buffer_clear_stops_the_audio(rtc_server: tuple[str, ServerState]) -> None:
    base, state = rtc_server
    threads = _call_threads()

    async def main() -> None:
        client = RtcClient(base)
        assert (await client.offer()).status_code == 201
        await client.until(lambda e: e["type"] == "session.created")
        ask = "Tell me a long story about a dragon and a knight."
        client.send({"type": "conversation.item.create", "item": user_text_item(ask)})
        client.send({"type": "response.create"})
        await client.until(lambda e: e["type"] == "output_audio_buffer.started")
        client.send({"type": "output_audio_buffer.clear"})
        got = await client.until(lambda e: e["type"] == "output_audio_buffer.cleared")
        cleared_at = len(client.seen)
        done = await client.until(lambda e: e["type"] == "response.done")
        status = done[-1]["response"]["status"]
        assert status in ("cancelled", "completed"), status
        if status == "cancelled":  # the item keeps only what was played
            played = done[-1]["response"]["output"][0]["content"][0]["transcript"]
            generated = "".join(
                e["delta"]
                for e in got + done
                if e["type"] == "response.output_audio_transcript.delta"
            )
            assert len(played) <= len(generated)
        await asyncio.sleep(1.0)  # frames still arriving would be counted meanwhile
        # at most a few frames already on the wire when the clear took effect
        assert client.audible_frames(after_event=cleared_at) <= 5
        await client.close()

    run(main())
    assert_nothing_left(state, threads)


def test_hangup_ends_the_call(rtc_server: tuple[str, ServerState]) -> None:
    base, state = rtc_server
    threads = _call_threads()

    async def main() -> None:
        client = RtcClient(base)
        assert (await client.offer()).status_code == 201
        await client.until(lambda e: e["type"] == "session.created")
        async with httpx.AsyncClient() as http:
            reply = await http.post(f"http://{base}{client.location}/hangup")
            assert reply.status_code == 200
            again = await http.post(f"http://{base}{client.location}/hangup")
            assert again.status_code == 404
            assert again.json()["error"]["code"] == "call_not_found"
        await client.close()

    run(main())
    assert_nothing_left(state, threads)
