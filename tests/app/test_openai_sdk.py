"""The official `openai` SDK's realtime clients (GA and beta) against a real server socket."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import openai
import pytest

from tests.conftest import REALTIME_RATE, user_text_item

# The SDK's own websocket use triggers a DeprecationWarning inside the websockets package.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _client(live_server: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", websocket_base_url=f"ws://{live_server}/v1")


def _until_done(connection: Any) -> list[Any]:
    events = []
    for event in connection:
        events.append(event)
        if event.type == "response.done":
            return events
    raise AssertionError("connection closed before response.done")


def _question_pcm(components: Any) -> bytes:
    speech = components.tts.synthesize("What is the capital of France?", REALTIME_RATE)
    silence = np.zeros(REALTIME_RATE, dtype=np.float32)
    samples = np.concatenate([silence[:4800], speech, silence])
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def test_ga_client_text_turn(live_server: str) -> None:
    with _client(live_server).realtime.connect(model="r1voice") as connection:
        connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        connection.conversation.item.create(item=user_text_item("What is the capital of France?"))
        connection.response.create()
        events = _until_done(connection)
    types = [e.type for e in events]
    assert types[0] == "session.created"
    assert "session.updated" in types and "conversation.item.added" in types
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert "paris" in text.lower()
    assert events[-1].response.status == "completed"


def test_ga_client_audio_turn(live_server: str, shared_components: Any) -> None:
    pcm = _question_pcm(shared_components)
    with _client(live_server).realtime.connect(model="r1voice") as connection:
        connection.session.update(session={"type": "realtime", "output_modalities": ["audio"]})
        for i in range(0, len(pcm), 960):  # 20 ms of 24 kHz PCM16
            connection.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + 960]).decode())
        events = _until_done(connection)
    transcript = next(
        e for e in events if e.type == "conversation.item.input_audio_transcription.completed"
    )
    assert "capital of france" in transcript.transcript.lower()
    audio = b"".join(
        base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta"
    )
    assert len(audio) / 2 / REALTIME_RATE >= 0.5
    spoken = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    assert "paris" in spoken.lower()


def test_beta_client_text_turn(live_server: str) -> None:
    with _client(live_server).beta.realtime.connect(model="r1voice") as connection:
        connection.session.update(session={"modalities": ["text"]})
        connection.conversation.item.create(item=user_text_item("What is the capital of France?"))
        connection.response.create()
        events = _until_done(connection)
    types = [e.type for e in events]
    assert "conversation.item.created" in types and "conversation.item.added" not in types
    text = "".join(e.delta for e in events if e.type == "response.text.delta")
    assert "paris" in text.lower()
