"""How a failed response is reported: whose fault it was, and the client event it names."""

from __future__ import annotations

from app.llm import LLMBackendError
from app.realtime.responses import ending


def test_a_prompt_too_long_is_the_client_s_to_fix_and_names_its_event() -> None:
    exc = LLMBackendError("conversation too long", code="context_length_exceeded")
    error, details = ending.failure(exc, "resp_1", "evt_create")
    assert (error.code, error.kind, error.client_event_id) == (
        "context_length_exceeded",
        "invalid_request_error",
        "evt_create",
    )
    assert error.message == "the response failed: conversation too long"
    assert details == {
        "type": "failed",
        "error": {"code": "context_length_exceeded", "message": "conversation too long"},
    }


def test_a_bug_of_ours_is_a_server_error() -> None:
    error, details = ending.failure(KeyError("x"), "resp_1", None)
    assert (error.code, error.kind, error.client_event_id) == ("server_error", "server_error", None)
    assert details["error"]["code"] == "server_error"


def test_failed_speech_leaves_a_text_answer() -> None:
    error = ending.speech_failed(RuntimeError("no voice"), "resp_1")
    assert (error.code, error.kind) == ("tts_failed", "server_error")
    assert "this answer is text only" in error.message
