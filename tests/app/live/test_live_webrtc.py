"""`POST /v1/live/sessions` refuses a bad request by name before any peer is made: an SDP
that offers no audio, an audio format (WebRTC negotiates it), an unknown field of the
session or of the body. (A session made this way: tests/clients/test_openai_live.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from aiortc import RTCConfiguration, RTCPeerConnection

from tests.clients.conftest import SHORT_ANSWER

pytestmark = pytest.mark.timeout(300)


async def offer_sdp(audio: bool) -> str:
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    if audio:
        pc.addTransceiver("audio")
    pc.createDataChannel("oai-events")
    await pc.setLocalDescription(await pc.createOffer())
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp


def test_bad_webrtc_requests_are_refused_by_name(scripted_live: Any) -> None:
    with_audio, without_audio = asyncio.run(offer_sdp(True)), asyncio.run(offer_sdp(False))
    model = {"model": "gpt-live-1"}
    cases = [
        (
            {"session": model, "transport": {"type": "webrtc", "sdp": without_audio}},
            "transport.sdp",
        ),
        (
            {
                "session": {**model, "audio": {"format": {"type": "audio/pcm", "rate": 24000}}},
                "transport": {"type": "webrtc", "sdp": with_audio},
            },
            "session.audio.format",
        ),
        (
            {
                "session": {**model, "voice": "marin"},
                "transport": {"type": "webrtc", "sdp": with_audio},
            },
            "session.voice",
        ),
        ({"session": model, "transport": {"type": "webrtc", "sdp": with_audio}, "x": 1}, "x"),
        ({"session": model, "transport": {"type": "sip", "sdp": with_audio}}, "transport"),
    ]
    with scripted_live(SHORT_ANSWER) as address:
        replies = [
            httpx.post(f"http://{address}/v1/live/sessions", json=body, timeout=60)
            for body, _ in cases
        ]
    assert [r.status_code for r in replies] == [400] * len(cases)
    assert [r.json()["error"]["param"] for r in replies] == [param for _, param in cases]
    assert replies[0].json()["error"]["code"] == "offer_without_audio"
    assert replies[2].json()["error"]["code"] == "unknown_parameter"
