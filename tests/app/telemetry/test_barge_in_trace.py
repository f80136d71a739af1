"""A barge-in, traced and recorded (real models, one session): the answered turn is
marked interrupted with its barge-in span ended by the cancel, the next turn follows,
and the recording keeps only what was sent before the answer stopped."""

from __future__ import annotations

import base64
import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from websockets.sync.client import connect

from app.audio import float_to_pcm16
from app.protocol.server_events import AudioDelta, ResponseDone
from app.recording import RecordingStore
from app.telemetry import Telemetry
from tests.app.recording.test_recorded_call import wait_for
from tests.conftest import app_with, load_clip, run_live, user_text_item


def test_a_barge_in_marks_the_turn_interrupted_and_cuts_the_recording(
    shared_components: Any, tmp_path: Path
) -> None:
    exporter = InMemorySpanExporter()
    app = app_with(shared_components)
    app.state.server.telemetry = Telemetry(
        exporter, reports=2, batch=False, recordings=RecordingStore(str(tmp_path))
    )
    silence = np.zeros(24_000, np.float32)
    speech = float_to_pcm16(np.concatenate([load_clip("jfk.flac")[: 3 * 24_000], silence, silence]))
    for address in run_live(app):
        with connect(f"ws://{address}/v1/realtime?dialect=beta", open_timeout=30) as ws:
            session_id = json.loads(ws.recv(timeout=30))["session"]["id"]
            item = user_text_item("Tell me a long story about a dragon and a knight.")
            ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
            ws.send(json.dumps({"type": "response.create"}))
            before: list[dict[str, Any]] = []
            while sum(e["type"] == AudioDelta.TYPE for e in before) < 15:  # ~1.5 s sent
                before.append(json.loads(ws.recv(timeout=120)))
            for i in range(0, len(speech), 4800):  # 100 ms appends
                audio = base64.b64encode(speech[i : i + 4800]).decode()
                ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
            after = [json.loads(ws.recv(timeout=120))]
            while after[-1]["type"] != ResponseDone.TYPE:
                after.append(json.loads(ws.recv(timeout=120)))
    assert after[-1]["response"]["status_details"]["reason"] == "turn_detected"
    sent_s = sum(len(e["delta"]) * 3 // 4 for e in before + after if e["type"] == AudioDelta.TYPE)

    wait_for(tmp_path / f"{session_id}.json")  # the session closed: every span ended
    spans = exporter.get_finished_spans()
    turns = sorted((s for s in spans if s.name == "r1voice.turn"), key=lambda s: s.start_time)
    first = turns[0]
    assert first.attributes["r1voice.turn.end_reason"] == "manual"  # response.create
    assert first.attributes["r1voice.turn.was_interrupted"] is True
    barge = [
        s
        for s in spans
        if s.name == "r1voice.barge_in" and s.parent.span_id == first.context.span_id
    ]
    assert barge and barge[-1].attributes["r1voice.barge_in.outcome"] == "cancel"
    assert len(turns) >= 2 and turns[1].attributes["r1voice.turn.number"] == 2
    assert turns[1].start_time < first.end_time  # spoken while the first was answered

    with wave.open(str(tmp_path / f"{session_id}.wav")) as wav:
        frames = np.frombuffer(wav.readframes(wav.getnframes()), np.int16).reshape(-1, 2)
    played_s = np.count_nonzero(frames[:, 1]) / 16_000
    assert 0 < played_s < sent_s / 2 / 24_000  # cut where the barge-in stopped it
