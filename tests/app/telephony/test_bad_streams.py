"""A malformed media stream is closed with a reason naming what was wrong, counted in
/metrics by its code, and the call beside it goes on being answered."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
import websockets

from app.audio import encode_audio
from bench.voice.twilio_caller import RATE, SILENCE, TwilioCaller
from tests.clients.conftest import serve
from tests.conftest import app_with

STREAM = "/v1/telephony/twilio/stream"
SID = "MZbad"
START: dict[str, Any] = {
    "event": "start",
    "streamSid": SID,
    "start": {
        "streamSid": SID,
        "callSid": "CAbad",
        "customParameters": {},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    },
}


def _media(payload: str, sid: str = SID) -> dict[str, Any]:
    return {"event": "media", "streamSid": sid, "media": {"track": "inbound", "payload": payload}}


SILENT = base64.b64encode(SILENCE).decode()
# (what it sends after `connected`, the close code, words of the reason, the metric's code)
CASES: dict[str, tuple[list[Any], int, str, str]] = {
    "media before start": ([_media(SILENT)], 1008, "before `start`", "not_started"),
    "wrong streamSid": ([START, _media(SILENT, "MZother")], 1008, "MZother", "wrong_stream_sid"),
    "not base64": ([START, _media("@@not base64@@")], 1007, "not base64", "invalid_media"),
    "not 160 bytes": (
        [START, _media(base64.b64encode(SILENCE[:100]).decode())],
        1007,
        "100 bytes, not 160",
        "invalid_media",
    ),
    "unknown event": (
        [START, {"event": "hello", "streamSid": SID}],
        1008,
        "'hello'",
        "unknown_event",
    ),
    "not json": ([START, "{nope"], 1007, "not JSON", "invalid_json"),
    "another format": (
        [{**START, "start": {**START["start"], "mediaFormat": {"encoding": "audio/x-l16"}}}],
        1008,
        "audio/x-mulaw",
        "unsupported_format",
    ),
}


async def _bad_stream(url: str, messages: list[Any]) -> tuple[int | None, str]:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        for message in messages:
            await ws.send(message if isinstance(message, str) else json.dumps(message))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(ws.recv(), 30)
    return closed.value.rcvd.code if closed.value.rcvd else None, (
        closed.value.rcvd.reason if closed.value.rcvd else ""
    )


def _count(text: str, code: str) -> float:
    name = f'r1voice_transport_errors_total{{code="{code}",transport="twilio"}}'
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


@pytest.mark.timeout(600)
def test_each_bad_stream_closes_alone(shared_components: Any) -> None:
    app = app_with(shared_components)
    question = encode_audio(
        shared_components.tts.synthesize("What is the capital of France?", RATE), "audio/pcmu"
    )

    async def main(address: str) -> tuple[dict[str, tuple[int | None, str]], bool]:
        url = f"ws://{address}{STREAM}"
        caller = await TwilioCaller.open(url)  # a good call, open all along
        closes = {}
        for name, (messages, *_rest) in CASES.items():
            closes[name] = await _bad_stream(url, messages)
        await caller.say(question)
        _, _, _ = await caller.wait_for(lambda m: m["event"] == "mark", 0, 120)
        answered = bool([m for _, m in caller.of("media") if m["media"]["audible"]])
        await caller.hang_up()
        return closes, answered

    with serve(app) as address:
        closes, answered = asyncio.run(main(address))
    assert answered  # the good call beside them was heard and answered
    metrics = app.state.server.metrics.render().decode()
    expected_counts: dict[str, int] = {}
    for name, (_, code, words, metric) in CASES.items():
        got_code, reason = closes[name]
        assert got_code == code, (name, got_code, reason)
        assert words in reason, (name, reason)
        expected_counts[metric] = expected_counts.get(metric, 0) + 1
    for metric, count in expected_counts.items():
        assert _count(metrics, metric) == count, metric
    assert app.state.server.sessions == {}
