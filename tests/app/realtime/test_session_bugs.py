"""The bugs of issue 10, each driven through a real session over a real WebSocket.

Audio goes through the real VAD and ASR (whisper tiny.en); answers come from a scripted
LLM where the model's words do not matter. Every test asserts the exact events the
client sees.

JFK (jfk.flac, 11 s): "And so, my fellow Americans, ask not what your country can do for
you, ask what you can do for your country." tiny.en hears 0-4 s as "And so my fellow
Americans ask" and 5.8-10 s as "country can do for you ask what you can do for your"
(cut at 6 s, "country" is heard as "One tree").
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.audio import PROTOCOL_RATE
from app.llm import ChatMessage, LLMBackendError
from app.protocol.server_events import (
    ContentPartAdded,
    InputAudioCleared,
    InputAudioCommitted,
    ItemCreated,
    ItemDeleted,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    SessionUpdated,
    SpeechStarted,
    SpeechStopped,
    TextDelta,
    TranscriptionCompleted,
    TranscriptionDelta,
)
from app.realtime.conversation import MESSAGE_OVERHEAD_TOKENS
from app.realtime.turns import input_audio
from tests.conftest import (
    append_event,
    client_with,
    is_done,
    load_clip,
    receive_until,
    stream_audio,
)
from tests.fakes import ScriptedLLM

COMPLETED = TranscriptionCompleted.TYPE
DELTA = TranscriptionDelta.TYPE
FIRST_WORDS = {"fellow", "americans"}  # only in 0-4 s
SECOND_WORDS = {"country"}  # only in 6-10 s


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * PROTOCOL_RATE), dtype=np.float32)


def _jfk(start_s: float, end_s: float) -> np.ndarray:
    return load_clip("jfk.flac")[int(start_s * PROTOCOL_RATE) : int(end_s * PROTOCOL_RATE)]


def _words(text: str) -> set[str]:
    return set(re.sub(r"[^\w\s']", " ", text.lower()).split())


def _send(ws: Any, event_type: str, **fields: Any) -> None:
    ws.send_text(json.dumps({"type": event_type, **fields}))


def _of_type(event_type: str):  # type: ignore[no-untyped-def]
    return lambda event: event["type"] == event_type


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def _update(ws: Any, session: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    """session.update; returns the reply (session.updated, or the error)."""
    fields: dict[str, Any] = {"session": session}
    if event_id is not None:
        fields["event_id"] = event_id
    _send(ws, "session.update", **fields)
    reply = ws.receive_json()
    assert reply["type"] in (SessionUpdated.TYPE, "error"), reply
    return reply


# JFK pauses ~1 s after "Americans": a longer silence window keeps each clip one turn
# (a shorter one would rightly merge the two halves, deleting the first).
VAD_NO_ANSWER = {
    "turn_detection": {"type": "server_vad", "silence_duration_ms": 1500, "create_response": False}
}


def _open(ws: Any) -> str:
    created = ws.receive_json()
    assert created["type"] == SessionCreated.TYPE
    return created["session"]["id"]


def _voice_turn_events(ws: Any, audio: np.ndarray) -> list[dict[str, Any]]:
    """Stream `audio` and collect events up to its (one) final transcript."""
    stream_audio(ws, audio)
    return receive_until(ws, _of_type(COMPLETED))


def _committed_ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["item_id"] for e in events if e["type"] == InputAudioCommitted.TYPE]


# -- bug 1: clear, then speech --------------------------------------------------------


def test_bug1_clear_then_speech_is_a_new_turn(app_client: TestClient) -> None:
    """Before the fix the VAD position rewound on clear: the next utterance looked like it
    continued the cleared turn, which was deleted, and its words came back again."""
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        assert _update(ws, VAD_NO_ANSWER)["type"] == SessionUpdated.TYPE
        first = _voice_turn_events(ws, np.concatenate([_silence(2), _jfk(0, 4), _silence(2)]))
        _send(ws, "input_audio_buffer.clear", event_id="clear-1")
        cleared = receive_until(ws, _of_type(InputAudioCleared.TYPE))
        second = _voice_turn_events(ws, np.concatenate([_silence(2), _jfk(5.8, 10), _silence(2)]))
    events = first + cleared + second
    assert ItemDeleted.TYPE not in _types(events)
    assert "error" not in _types(events)
    committed = _committed_ids(events)
    assert len(committed) == 2 and committed[0] != committed[1], committed
    assert _committed_ids(first) == committed[:1] and _committed_ids(second) == committed[1:]
    transcripts = {e["item_id"]: e["transcript"] for e in events if e["type"] == COMPLETED}
    assert set(transcripts) == set(committed)
    first_words, second_words = (_words(transcripts[i]) for i in committed)
    assert first_words & FIRST_WORDS, transcripts
    assert second_words & SECOND_WORDS, transcripts
    assert not second_words & FIRST_WORDS, transcripts  # not the first turn's words again
    # the second turn's speech starts after the first one (positions never rewind)
    starts = [e["audio_start_ms"] for e in events if e["type"].endswith("speech_started")]
    assert len(starts) == 2 and starts[1] > starts[0] + 6000, starts


def test_bug1b_manual_commit_then_vad_turn_is_a_new_turn(app_client: TestClient) -> None:
    """A manual commit ends the chance to continue a turn: the next VAD turn, starting
    right after it, must not reopen (delete) the manually committed item."""
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        assert _update(ws, {"turn_detection": None})["type"] == SessionUpdated.TYPE
        stream_audio(ws, np.concatenate([_silence(0.5), _jfk(0, 4)]))
        _send(ws, "input_audio_buffer.commit", event_id="commit-1")
        manual = receive_until(ws, _of_type(COMPLETED))
        assert _update(ws, VAD_NO_ANSWER)["type"] == SessionUpdated.TYPE
        # speech again within the merge window (1.5 s) of the manual commit's end
        vad = _voice_turn_events(ws, np.concatenate([_silence(0.2), _jfk(5.8, 10), _silence(2)]))
    assert _types(manual)[:2] == [InputAudioCommitted.TYPE, ItemCreated.TYPE]
    assert SpeechStarted.TYPE not in _types(manual)
    events = manual + vad
    assert ItemDeleted.TYPE not in _types(events)
    assert "error" not in _types(events)
    committed = _committed_ids(events)
    assert len(committed) == 2 and committed[0] != committed[1], committed
    vad_types = _types(vad)
    assert vad_types.index(SpeechStarted.TYPE) < vad_types.index(SpeechStopped.TYPE)
    assert vad_types.index(SpeechStopped.TYPE) < vad_types.index(InputAudioCommitted.TYPE)
    started = next(e for e in vad if e["type"] == SpeechStarted.TYPE)
    assert started["item_id"] == committed[1]
    transcripts = {e["item_id"]: e["transcript"] for e in events if e["type"] == COMPLETED}
    assert _words(transcripts[committed[0]]) & FIRST_WORDS, transcripts
    assert _words(transcripts[committed[1]]) & SECOND_WORDS, transcripts
    assert not _words(transcripts[committed[1]]) & FIRST_WORDS, transcripts


# -- bug 3: VAD switched off mid-turn -------------------------------------------------


def test_bug3_vad_off_mid_turn_drops_the_open_turn(app_client: TestClient) -> None:
    state = app_client.app.state.server  # type: ignore[attr-defined]
    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        session_id = _open(ws)
        assert _update(ws, VAD_NO_ANSWER)["type"] == SessionUpdated.TYPE
        stream_audio(ws, np.concatenate([_silence(0.5), _jfk(0, 1.5)]))  # mid-sentence
        before = receive_until(ws, _of_type(SpeechStarted.TYPE))
        turn_item = before[-1]["item_id"]
        assert state.sessions[session_id].turns.turn is not None
        off = _update(ws, {"turn_detection": None}, event_id="vad-off")
        assert off["type"] == SessionUpdated.TYPE and off["session"]["turn_detection"] is None
        assert state.sessions[session_id].turns.turn is None
        stream_audio(ws, np.concatenate([_jfk(1.5, 4), _silence(2)]))  # the turn "ends" here
        _send(ws, "input_audio_buffer.commit", event_id="commit-1")
        after = receive_until(ws, _of_type(COMPLETED))
        assert state.sessions[session_id].turns.turn is None
    types = _types(after)
    # nothing of the dropped turn after VAD went off: no stop, no commit, no partials
    assert SpeechStopped.TYPE not in types
    assert SpeechStarted.TYPE not in types
    assert not [e for e in after if e["type"] == DELTA and e["item_id"] == turn_item]
    assert types[:2] == [InputAudioCommitted.TYPE, ItemCreated.TYPE], types
    committed = _committed_ids(after)
    assert len(committed) == 1 and committed[0] != turn_item
    assert "error" not in types
    assert _words(after[-1]["transcript"]) & FIRST_WORDS, after[-1]


# -- bug 4: failures are failures -----------------------------------------------------


def _text_turn(ws: Any, text: str, **response: Any) -> list[dict[str, Any]]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    _send(ws, "conversation.item.create", item=item)
    assert ws.receive_json()["type"] == ItemCreated.TYPE
    _send(ws, "response.create", response={"modalities": ["text"], **response})
    return receive_until(ws, is_done)


def _assert_failed(events: list[dict[str, Any]], code: str, kind: str) -> None:
    types = _types(events)
    assert types.count("error") == 1 and types.count(ResponseDone.TYPE) == 1, types
    assert types.index(ResponseCreated.TYPE) < types.index("error") < types.index(ResponseDone.TYPE)
    error = events[types.index("error")]["error"]
    assert (error["code"], error["type"]) == (code, kind), error
    response = events[-1]["response"]
    assert response["id"] == events[types.index(ResponseCreated.TYPE)]["response"]["id"]
    assert response["status"] == "failed", response
    assert response["status_details"]["type"] == "failed"
    assert response["status_details"]["error"]["code"] == code
    assert response["output"][0]["status"] == "incomplete"


def test_bug4_unexpected_exception_fails_the_response_and_the_session_goes_on(
    shared_components: Any,
) -> None:
    llm = ScriptedLLM(["All ", "good."], fail=RuntimeError("boom"))
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        failed = _text_turn(ws, "Hello?")
        llm.fail = None
        ok = _text_turn(ws, "Hello again?")
    _assert_failed(failed, "server_error", "server_error")
    assert "boom" in failed[_types(failed).index("error")]["error"]["message"]
    assert TextDelta.TYPE not in _types(failed)
    assert "error" not in _types(ok)
    assert ok[-1]["response"]["status"] == "completed"
    assert "".join(e["delta"] for e in ok if e["type"] == TextDelta.TYPE) == "All good."
    # the failed response left nothing in the conversation: the second prompt has no answer
    assert [m.role for m in llm.prompts[1]] == ["system", "user", "user"]
    assert not llm.running


def test_bug4_backend_error_before_generation_fails_with_its_code(
    shared_components: Any,
) -> None:
    """A chat-template failure raises before the backend's own `try`: still `failed`."""
    llm = ScriptedLLM(fail=LLMBackendError("the chat template failed: no 'tool' role"))
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        failed = _text_turn(ws, "Hello?")
        llm.fail = None
        ok = _text_turn(ws, "Hello again?")
    _assert_failed(failed, "llm_error", "invalid_request_error")
    assert "chat template failed" in failed[_types(failed).index("error")]["error"]["message"]
    assert ok[-1]["response"]["status"] == "completed"


# -- bug 10: token limits ------------------------------------------------------------


def _refused_limits(components: Any, limit: int) -> dict[str, Any]:
    """A response.create and a session.update with token limit `limit`, then a valid
    response; what the client saw."""
    llm = ScriptedLLM(["Fine."])
    client = client_with(dataclasses.replace(components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        created = ws.receive_json()
        _send(
            ws,
            "response.create",
            event_id=f"ev-create-{limit}",
            response={"modalities": ["text"], "max_output_tokens": limit},
        )
        error = ws.receive_json()
        _send(
            ws,
            "session.update",
            event_id=f"ev-update-{limit}",
            session={"max_response_output_tokens": limit},
        )
        session_error = ws.receive_json()
        _send(ws, "response.create", response={"modalities": ["text"], "max_output_tokens": 1})
        after = receive_until(ws, is_done)
        updated = _update(ws, {"max_response_output_tokens": "inf"})
    assert updated["type"] == SessionUpdated.TYPE
    assert updated["session"]["max_response_output_tokens"] == 4096
    return {
        "default": created["session"]["max_response_output_tokens"],
        "error": error,
        "session_error": session_error,
        "after": after,
        "prompts": llm.prompts,
    }


@pytest.mark.parametrize("limit", [0, -5])
def test_bug10_token_limits_must_be_positive(shared_components: Any, limit: int) -> None:
    seen = _refused_limits(shared_components, limit)
    error, session_error = seen["error"], seen["session_error"]
    assert error["type"] == "error", error
    assert error["error"]["code"] == "invalid_value"
    assert error["error"]["param"] == "response.max_output_tokens"
    assert error["error"]["event_id"] == f"ev-create-{limit}"
    assert session_error["type"] == "error", session_error
    assert session_error["error"]["code"] == "invalid_value"
    assert session_error["error"]["param"] == "session.max_response_output_tokens"
    assert session_error["error"]["event_id"] == f"ev-update-{limit}"
    # the refused events started nothing and changed nothing; the session goes on
    events = seen["after"]
    assert _types(events)[0] == ResponseCreated.TYPE  # the update's one reply was its error
    assert "error" not in _types(events)
    assert events[-1]["response"]["status"] == "completed"
    assert len(seen["prompts"]) == 1


# -- bug 6: the buffer cap is checked before decoding ---------------------------------


def test_bug6_oversized_append_is_refused_before_decoding(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_decoding(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("decoded an append")

    with app_client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        assert _update(ws, {"turn_detection": None})["type"] == SessionUpdated.TYPE
        ws.send_text(append_event(_silence(0.5)))  # fits: buffered
        assert _update(ws, {})["type"] == SessionUpdated.TYPE  # the append was handled
        monkeypatch.setattr(input_audio, "MAX_BUFFER_S", 1)
        monkeypatch.setattr(input_audio, "decode_audio", no_decoding)
        big = json.loads(append_event(_silence(0.6)))  # 0.5 s + 0.6 s > 1 s
        _send(ws, "input_audio_buffer.append", event_id="too-big", audio=big["audio"])
        refused = ws.receive_json()
        # a small append still reaches decoding (proves the patch is live)
        _send(ws, "input_audio_buffer.append", event_id="small", audio=big["audio"][:400])
        decoded = ws.receive_json()
        monkeypatch.undo()
        _send(ws, "input_audio_buffer.commit", event_id="commit")
        committed = ws.receive_json()
    assert refused["type"] == "error", refused
    assert refused["error"]["code"] == "input_audio_buffer_full"
    assert refused["error"]["param"] == "audio"
    assert refused["error"]["event_id"] == "too-big"
    assert decoded["type"] == "error" and decoded["error"]["code"] == "server_error", decoded
    assert decoded["error"]["event_id"] == "small"
    # the refused append added nothing: the buffer still holds the first 0.5 s
    assert committed["type"] == InputAudioCommitted.TYPE, committed


# -- bug 8: the conversation fits the context ----------------------------------------


def test_bug8_oldest_turns_are_dropped_to_fit_the_context(shared_components: Any) -> None:
    context, max_tokens = 60, 5
    instructions = "Be brief."
    llm = ScriptedLLM(["Hello ", "there."], context_length=context)
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    turns: list[tuple[str, str, list[dict[str, Any]]]] = []
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        # the trim alone (history "drop"; the summary of what it drops: test_history_summary*)
        drop = {"instructions": instructions, "r1voice": {"history": "drop"}}
        assert _update(ws, drop)["type"] == SessionUpdated.TYPE
        for n in range(6):
            user_id = f"user-{n}"
            item = {
                "id": user_id,
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"question number {n} please"}],
            }
            _send(ws, "conversation.item.create", item=item)
            assert ws.receive_json()["item"]["id"] == user_id
            _send(
                ws,
                "response.create",
                response={"modalities": ["text"], "max_output_tokens": max_tokens},
            )
            events = receive_until(ws, is_done)
            assert events[-1]["response"]["status"] == "completed", events[-1]
            turns.append((user_id, events[-1]["response"]["output"][0]["id"], events))

    def cost(messages: list[ChatMessage]) -> int:
        return sum(len(m.content.split()) + MESSAGE_OVERHEAD_TOKENS for m in messages)

    # budget 55 = system 10 + 45; a turn costs 12 (user) + 10 (answer): next to the new
    # question (12) only the previous turn fits, so the third answer is past the budget
    # and the history drops to its low-water mark (half: 27), the new question alone;
    # the fourth fits again, and the fifth drops the two turns before it (issue 29: one
    # turn at a time moved the prompt's start every turn, a prefix-cache miss each time)
    for n, (_user, _answer, events) in enumerate(turns):
        deleted = [e["item_id"] for e in events if e["type"] == ItemDeleted.TYPE]
        if n < 2 or n % 2:
            assert deleted == [], (n, deleted)
        else:  # the two turns kept so far: each user item, then its answer
            assert deleted == [*turns[n - 2][:2], *turns[n - 1][:2]], (n, deleted)
            types = _types(events)
            assert types.index(ResponseCreated.TYPE) < types.index(ItemDeleted.TYPE)
        assert "error" not in _types(events)
    assert len(llm.prompts) == len(turns)
    for n, prompt in enumerate(llm.prompts):
        assert prompt[0] == ChatMessage("system", instructions)
        assert cost(prompt) <= context - max_tokens, (n, prompt)
        kept = [n - 1] if n % 2 else []
        expected = [ChatMessage("system", instructions)]
        for k in kept:
            expected += [
                ChatMessage("user", f"question number {k} please"),
                ChatMessage("assistant", "Hello there."),
            ]
        expected.append(ChatMessage("user", f"question number {n} please"))
        assert prompt == expected, (n, prompt)


# -- found by the fuzz test: a barge-in inside one large append ----------------------


def test_barge_in_within_one_append_is_not_taken_for_a_cough(shared_components: Any) -> None:
    """Speech longer than the barge-in hold that starts and ends inside one append (a
    client sending large appends) interrupts the answer like streamed speech does;
    before, the hold was only checked after the whole append, when the turn had
    already stopped, so it was dropped as a cough. (The speech pauses the answer; its
    words, once transcribed, cancel it.)"""
    llm = ScriptedLLM(["Never ", "said."], hold=asyncio.Event())  # answers nothing, ever
    client = client_with(dataclasses.replace(shared_components, llm=llm))
    with client.websocket_connect("/v1/realtime?dialect=beta") as ws:
        _open(ws)
        assert _update(ws, VAD_NO_ANSWER)["type"] == SessionUpdated.TYPE
        _send(ws, "response.create", response={"modalities": ["text"]})
        answer = receive_until(ws, _of_type(ContentPartAdded.TYPE))
        ws.send_text(append_event(np.concatenate([_silence(0.5), _jfk(0, 4), _silence(2)])))
        events = receive_until(ws, is_done)
        assert events[-1]["response"]["status_details"]["reason"] == "turn_detected", events
        if COMPLETED not in _types(events):
            events += receive_until(ws, _of_type(COMPLETED))
    types = _types(events)
    assert types.index(SpeechStarted.TYPE) < types.index(ResponseDone.TYPE)
    assert types.index(SpeechStopped.TYPE) < types.index(InputAudioCommitted.TYPE)
    done = events[types.index(ResponseDone.TYPE)]["response"]
    assert done["id"] == answer[0]["response"]["id"]
    assert done["status"] == "cancelled"
    assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
    transcript = next(e for e in events if e["type"] == COMPLETED)["transcript"]
    assert _words(transcript) & FIRST_WORDS, events
    assert not llm.running
