"""`bench capacity --transport twilio`'s callers: a phone call through the real pipeline
(Twilio's media stream at real-time pace) gives turns in the shape the sweep reads, and
a barge-in trial over a long answer gets its `clear`; the option reaches the run. No
timing is asserted."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.cli import build_parser
from bench.capacity.phone_session import STREAM_PATH, phone_barge_in, phone_session, ulaw
from bench.capacity.stats import was_answered
from bench.voice.workload import Clip


def _clip(shared_components: Any, name: str, text: str) -> Clip:
    samples = shared_components.tts.synthesize(text, PROTOCOL_RATE)
    return Clip(name, "tts", text, np.asarray(samples, np.float32))


@pytest.mark.timeout(600)
def test_a_call_gives_answered_turns_and_a_barge_in_clear(
    live_server: str, shared_components: Any
) -> None:
    url = f"ws://{live_server}{STREAM_PATH}"
    clips = [_clip(shared_components, "q1", "What is the capital of France?")]
    question = ulaw(_clip(shared_components, "long", "Tell me a long story.").pcm)
    interruption = _clip(shared_components, "interruption", "Wait, stop, tell me the time.")

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        session = await phone_session(url, clips * 2, 0.0, 120.0, 1.5, think_s=lambda: 0.2)
        trial = await phone_barge_in(url, question, interruption, 120.0, 0.0)
        return session, trial

    session, trial = asyncio.run(main())
    assert session["error"] is None and session["mic_max_lag_ms"] >= 0.0
    turns = session["turns"]
    assert [t["clip"] for t in turns] == ["q1", "q1"]
    for turn in turns:
        assert was_answered(turn), turn
        assert turn["voice_to_voice_ms"] > 0  # the first frame came after the speech's end
        assert turn["voice_to_voice_audible_ms"] >= turn["voice_to_voice_ms"]
    assert trial["measured"], trial
    assert trial["speech_to_clear_ms"] > 0 and trial["frames_before_clear"] >= 0


def test_a_call_that_cannot_connect_is_a_session_error() -> None:
    session = asyncio.run(phone_session("ws://127.0.0.1:9/none", [], 0.0, 1.0, 1.5))
    assert session["turns"] == [] and "cannot connect" in session["error"]


def test_the_transport_option_is_read() -> None:
    args = build_parser().parse_args(["bench", "capacity", "--quick", "--transport", "twilio"])
    assert args.transport == "twilio"
    assert build_parser().parse_args(["bench", "capacity"]).transport == "websocket"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "capacity", "--transport", "sip"])
