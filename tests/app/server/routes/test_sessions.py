"""GET /v1/r1voice/sessions and /v1/r1voice/sessions/{id}: recent sessions' reports,
newest first, made of their spans; guarded like the rest of the API."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from websockets.sync.client import connect

from app.protocol.server_events import ResponseDone, SessionCreated
from app.telemetry import Telemetry
from tests.conftest import app_with, ask, run_live, user_text_item

KEY = "sk-test-sessions"


def one_typed_turn(client: TestClient, headers: dict[str, str] | None = None) -> str:
    """A session with one typed question answered; returns its id."""
    with client.websocket_connect("/v1/realtime", headers=headers or {}) as ws:
        created = ws.receive_json()
        assert created["type"] == SessionCreated.TYPE
        ask(ws, "Say hello.")
        while ws.receive_json()["type"] != ResponseDone.TYPE:
            pass
    return str(created["session"]["id"])


def typed_turn_over_a_socket(address: str) -> str:
    with connect(f"ws://{address}/v1/realtime", open_timeout=30) as ws:
        created = json.loads(ws.recv(timeout=30))
        assert created["type"] == SessionCreated.TYPE
        ws.send(json.dumps({"type": "conversation.item.create", "item": user_text_item("Hi.")}))
        ws.send(json.dumps({"type": "response.create"}))
        while json.loads(ws.recv(timeout=180))["type"] != ResponseDone.TYPE:
            pass
    return str(created["session"]["id"])


def test_recent_sessions_newest_first_and_one_with_its_turns(shared_components: Any) -> None:
    app = app_with(shared_components)
    app.state.server.telemetry = Telemetry(reports=2)  # reports only: nothing exported
    for address in run_live(app):  # one server loop for the three sessions
        ids = [typed_turn_over_a_socket(address) for _ in range(3)]
    client = TestClient(app)
    listed = client.get("/v1/r1voice/sessions").json()
    assert [s["id"] for s in listed["data"]] == [ids[2], ids[1]]  # the oldest fell out
    assert listed["data"][0]["turns"] == 1
    report = client.get(f"/v1/r1voice/sessions/{ids[2]}").json()
    assert report["id"] == ids[2] and report["ended_at"] >= report["started_at"]
    assert [(i["role"], i["type"]) for i in report["items"]] == [
        ("user", "message"),
        ("assistant", "message"),
    ]
    [turn] = report["turns"]
    assert turn["attributes"]["r1voice.turn.answer_item"] == report["items"][1]["id"]
    assert turn["number"] == 1 and turn["end_reason"] == "manual"
    assert turn["was_interrupted"] is False
    names = [s["name"] for s in turn["stages"]]
    assert any(n.startswith("chat ") for n in names)
    assert {"r1voice.llm.queue", "r1voice.llm.prefill", "r1voice.llm.decode"} <= set(names)
    assert "r1voice.tts" in names
    assert all(s["start_ms"] >= turn["start_ms"] for s in turn["stages"])
    assert report["recording_url"] is None


def test_an_unknown_session_is_404_naming_it(shared_components: Any) -> None:
    client = TestClient(app_with(shared_components))
    reply = client.get("/v1/r1voice/sessions/sess_nope")
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "session_not_found"
    assert "sess_nope" in reply.json()["error"]["message"]


def test_reports_off_says_how_to_turn_them_on(shared_components: Any) -> None:
    app = app_with(shared_components)
    app.state.server.telemetry = Telemetry(reports=0)
    reply = TestClient(app).get("/v1/r1voice/sessions")
    assert reply.status_code == 404
    assert "R1VOICE_SESSION_REPORTS" in reply.json()["error"]["message"]


def test_reports_need_the_api_key(shared_components: Any) -> None:
    client = TestClient(app_with(shared_components, api_key=KEY))
    assert client.get("/v1/r1voice/sessions").status_code == 401
    session_id = one_typed_turn(client, {"Authorization": f"Bearer {KEY}"})
    assert client.get(f"/v1/r1voice/sessions/{session_id}").status_code == 401
    authorised = {"Authorization": f"Bearer {KEY}"}
    reply = client.get(f"/v1/r1voice/sessions/{session_id}", headers=authorised)
    assert reply.status_code == 200 and reply.json()["id"] == session_id
    assert json.dumps(reply.json())  # plain JSON all through
