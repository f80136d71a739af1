"""Every server event of a GA session validates against the event models the official
`openai` SDK ships (`openai.types.realtime`), so GA clients parse all of it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter, ValidationError

from app.audio import PROTOCOL_RATE
from tests.conftest import client_with, load_clip, receive_until, stream_audio, user_text_item
from tests.fakes import ScriptedLLM

SERVER_EVENT: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)


def invalid_events(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, first error) of each event the SDK's models refuse (our r1voice.* aside)."""
    bad = []
    for event in events:
        if event["type"].startswith("r1voice."):
            continue
        try:
            SERVER_EVENT.validate_python(event)
        except ValidationError as exc:
            bad.append((event["type"], str(exc).splitlines()[0:4].__str__()))
    return bad


def done(event: dict[str, Any]) -> bool:
    return event["type"] == "response.done"


def test_default_dialect_is_ga_and_every_event_validates(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime") as ws:  # no beta header: GA
        events = [ws.receive_json()]
        assert events[0]["type"] == "session.created"
        assert events[0]["session"]["type"] == "realtime"
        ws.send_text(
            json.dumps(
                {
                    "type": "session.update",
                    "event_id": "evt_update",
                    "session": {
                        "type": "realtime",
                        "output_modalities": ["audio"],
                        "instructions": "Answer in one short sentence.",
                        "audio": {
                            "input": {
                                "transcription": {"model": "gpt-4o-mini-transcribe"},
                                "turn_detection": {"type": "semantic_vad", "eagerness": "auto"},
                            },
                            "output": {"voice": "alloy"},
                        },
                    },
                }
            )
        )
        events += receive_until(ws, lambda e: e["type"] in ("session.updated", "error"))
        assert events[-1]["type"] == "session.updated", events[-1]
        # a typed turn, answered in text
        ws.send_text(
            json.dumps(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "Say hello."}],
                    },
                }
            )
        )
        ws.send_text(
            json.dumps(
                {
                    "type": "response.create",
                    "response": {"output_modalities": ["text"], "max_output_tokens": 16},
                }
            )
        )
        events += receive_until(ws, done)
        # a spoken turn, answered in audio
        silence = np.zeros(PROTOCOL_RATE, np.float32)
        stream_audio(
            ws,
            np.concatenate([silence, load_clip("jfk.flac")[: 4 * PROTOCOL_RATE], *[silence] * 5]),
        )
        # jfk pauses after "my fellow Americans": a first answer may start there and be
        # interrupted or merged away (deleted) when he goes on; the completed one stands
        events += receive_until(ws, lambda e: done(e) and e["response"]["status"] == "completed")
        answer_id = events[-1]["response"]["output"][0]["id"]
        ws.send_text(json.dumps({"type": "conversation.item.retrieve", "item_id": answer_id}))
        events += receive_until(ws, lambda e: e["type"] in ("conversation.item.retrieved", "error"))
        ws.send_text(json.dumps({"type": "bogus.event", "event_id": "evt_bogus"}))
        events += receive_until(ws, lambda e: e["type"] == "error")
    assert events[-1]["error"]["event_id"] == "evt_bogus"
    types = [e["type"] for e in events]
    assert "conversation.item.retrieved" in types
    assert invalid_events(events) == []


def ga(ws: Any, event: dict[str, Any]) -> None:
    ws.send_text(json.dumps(event))


def test_an_answer_can_be_truncated_while_it_plays(shared_components: Any) -> None:
    """Bug: the assistant item joined the conversation only when its response ended, so
    the truncate every client sends on barge-in got item_not_found."""
    long_answer = [f"Sentence number {i} is here, and it goes on. " for i in range(12)]
    llm = ScriptedLLM(long_answer)
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        ga(ws, {"type": "conversation.item.create", "item": user_text_item("Talk to me.")})
        ga(ws, {"type": "response.create", "response": {"output_modalities": ["audio"]}})
        events = receive_until(ws, lambda e: e["type"] == "response.output_audio.delta")
        item_id = next(e for e in events if e["type"] == "response.output_item.added")["item"]["id"]
        ga(ws, {"type": "conversation.item.retrieve", "item_id": item_id, "event_id": "evt_r"})
        ga(
            ws,
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": 0,
            },
        )
        events += receive_until(ws, lambda e: e["type"] == "conversation.item.truncated")
        retrieved = next(e for e in events if e["type"] == "conversation.item.retrieved")
        assert retrieved["item"]["id"] == item_id and retrieved["item"]["status"] == "in_progress"
        done = next(e for e in events if e["type"] == "response.done")
        assert done["response"]["status"] == "cancelled"
        (item_done,) = [
            e
            for e in events
            if e["type"] == "conversation.item.done" and e["item"]["id"] == item_id
        ]
        assert item_done["item"]["status"] == "incomplete"
        ga(ws, {"type": "conversation.item.retrieve", "item_id": item_id})
        after = receive_until(ws, lambda e: e["type"] == "conversation.item.retrieved")[-1]
        assert after["item"]["content"][0]["transcript"] == ""  # nothing was heard
        ga(ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        events += receive_until(ws, done_event)
    assert [m.role for m in llm.prompts[1]] == ["system", "user"]  # the unheard answer is gone
    assert invalid_events(events) == []


def done_event(event: dict[str, Any]) -> bool:
    return event["type"] == "response.done"


def test_an_update_with_an_unsupported_value_gets_one_error_and_changes_nothing(
    app_client: TestClient,
) -> None:
    """Bug: such an update got an `error` *and* a `session.updated` (the rest applied),
    so a client waiting for one reply to its event read the next event's reply."""
    with app_client.websocket_connect("/v1/realtime?dialect=ga") as ws:
        created = ws.receive_json()["session"]
        bad = {
            "type": "realtime",
            "instructions": "Be terse.",
            "audio": {
                "input": {"turn_detection": {"type": "telepathy"}},
                "output": {"voice": "no-such-voice"},
            },
        }
        ga(ws, {"type": "session.update", "event_id": "evt_u", "session": bad})
        voice_only = {"type": "realtime", "audio": {"output": {"voice": "no-such-voice"}}}
        ga(ws, {"type": "session.update", "event_id": "evt_v", "session": voice_only})
        ga(ws, {"type": "session.update", "event_id": "evt_w", "session": {"type": "realtime"}})
        events = receive_until(ws, lambda e: e["type"] == "session.updated")
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert [(e["code"], e["param"], e["event_id"]) for e in errors] == [
        # one reply each, naming the fields as the GA client wrote them
        ("invalid_value", "session.audio.input.turn_detection.type", "evt_u"),
        ("unsupported_voice", "session.audio.output.voice", "evt_v"),
    ]
    assert [e["type"] for e in events] == ["error", "error", "session.updated"]
    session = events[-1]["session"]  # the reply to evt_w: nothing of the others applied
    assert session["instructions"] == created["instructions"] != "Be terse."
    assert session["audio"] == created["audio"]
    assert invalid_events(events) == []


def test_agents_sdk_defaults_are_accepted(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        ga(
            ws,
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "audio": {
                        "input": {
                            "transcription": {"model": "gpt-4o-transcribe"},
                            "turn_detection": {"type": "semantic_vad", "eagerness": "high"},
                        }
                    },
                },
            },
        )
        updated = receive_until(ws, lambda e: e["type"] in ("session.updated", "error"))[-1]
    assert updated["type"] == "session.updated"
    turn = updated["session"]["audio"]["input"]["turn_detection"]
    assert (turn["type"], turn["eagerness"], turn["silence_duration_ms"]) == (
        "semantic_vad",
        "high",
        2000,  # semantic_vad high: ends by the turn model, at most 2 s of silence
    )
    assert updated["session"]["audio"]["input"]["transcription"]["model"] == "whisper-tiny.en"


def test_out_of_band_response_echoes_metadata_and_stays_out(shared_components: Any) -> None:
    llm = ScriptedLLM(["Fine."])
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        ga(ws, {"type": "conversation.item.create", "item": user_text_item("Classify me.")})
        response = {
            "conversation": "none",
            "metadata": {"topic": "x"},
            "output_modalities": ["text"],
        }
        ga(ws, {"type": "response.create", "response": response})
        events = receive_until(ws, done_event)
        ga(ws, {"type": "response.create", "response": {"output_modalities": ["text"]}})
        events += receive_until(ws, done_event)
    first = next(e for e in events if e["type"] == "response.done")["response"]
    assert first["metadata"] == {"topic": "x"} and first["conversation_id"] is None
    assert first["output_modalities"] == ["text"]
    assert [m.content for m in llm.prompts[1][1:]] == ["Classify me."]  # "Fine." was not kept
    assert invalid_events(events) == []


def test_transcription_null_sends_no_transcripts(app_client: TestClient) -> None:
    with app_client.websocket_connect("/v1/realtime?dialect=ga") as ws:
        ws.receive_json()
        audio_input = {
            "transcription": None,
            "turn_detection": {"type": "server_vad", "create_response": False},
        }
        ga(
            ws,
            {
                "type": "session.update",
                "session": {"type": "realtime", "audio": {"input": audio_input}},
            },
        )
        updated = receive_until(ws, lambda e: e["type"] == "session.updated")[-1]
        assert updated["session"]["audio"]["input"]["transcription"] is None
        silence = np.zeros(PROTOCOL_RATE, np.float32)
        stream_audio(
            ws, np.concatenate([silence, load_clip("jfk.flac")[: 3 * PROTOCOL_RATE], silence])
        )
        ws.send_text(json.dumps({"type": "sync.marker"}))  # handled after every append
        events = receive_until(ws, lambda e: e["type"] == "error")
        committed = [e for e in events if e["type"] == "input_audio_buffer.committed"]
        ga(ws, {"type": "conversation.item.retrieve", "item_id": committed[0]["item_id"]})
        retrieved = receive_until(ws, lambda e: e["type"] == "conversation.item.retrieved")
        events += retrieved
    assert committed
    assert not [e for e in events if "input_audio_transcription" in e["type"]]
    assert retrieved[-1]["item"]["role"] == "user"


def test_truncating_an_answer_already_deleted_is_confirmed(shared_components: Any) -> None:
    """A continued turn deletes the answer to its first half right after speech_started,
    just as clients truncate it on barge-in: the truncate must not fail (Pipecat treats
    an error there as fatal)."""
    llm = ScriptedLLM([f"Part {i} of a long answer, still going. " for i in range(10)])
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        ga(ws, {"type": "conversation.item.create", "item": user_text_item("Talk.")})
        ga(ws, {"type": "response.create", "response": {"output_modalities": ["audio"]}})
        events = receive_until(ws, lambda e: e["type"] == "response.output_audio.delta")
        item_id = next(e for e in events if e["type"] == "response.output_item.added")["item"]["id"]
        ga(ws, {"type": "response.cancel"})
        ga(ws, {"type": "conversation.item.delete", "item_id": item_id})
        truncate = {"type": "conversation.item.truncate", "item_id": item_id, "audio_end_ms": 0}
        ga(ws, {**truncate, "content_index": 0, "event_id": "evt_t"})
        events += receive_until(ws, lambda e: e["type"] in ("conversation.item.truncated", "error"))
    assert events[-1]["type"] == "conversation.item.truncated", events[-1]
    assert invalid_events(events) == []
