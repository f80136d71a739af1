"""Every server event the server sends, built as its call sites build it, with fixed ids.

The golden wire test (test_wire_golden.py) serialises these through the Outbox in both
dialects and compares with the JSON recorded before server events became types, so a
change of any event's wire form shows up as a diff. Each case names where it is sent.
"""

from __future__ import annotations

from typing import Any

from app.protocol import events
from app.protocol.dialect import session_to_ga

RESP, ITEM, USER, CALL = "resp_golden", "item_golden", "item_user", "call_golden"
AUDIO_AT = {"item_id": ITEM, "output_index": 0, "content_index": 0}


# A session object as SessionConfig.to_wire gives it (fixed here, so that a changed
# server default is no change of the wire), with a G.711 input (GA drops its rate).
BETA_SESSION: dict[str, Any] = {
    "id": "sess_golden",
    "object": "realtime.session",
    "model": "r1voice",
    "modalities": ["text", "audio"],
    "instructions": "Be brief.",
    "voice": "piper-en_US-joe-medium",
    "input_audio_format": "g711_ulaw",
    "output_audio_format": "pcm16",
    "input_audio_transcription": {"model": "whisper-tiny.en", "language": None},
    "turn_detection": {
        "type": "semantic_vad",
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 4000,
        "eagerness": "auto",
        "create_response": True,
        "interrupt_response": True,
        "idle_timeout_ms": None,
    },
    "temperature": 0.0,
    "max_response_output_tokens": 128,
    "speed": 1.0,
    "priority": -1,
    "tools": [{"type": "function", "name": "get_weather", "description": "d", "parameters": {}}],
    "tool_choice": "auto",
    "r1voice": {
        "max_reasoning_tokens": 256,
        "model": "golden-llm",
        "max_idle_nudges": 2,
        "false_interruption_timeout": 1.5,
        "history": "summarize",
    },
}


def session_object(ga: bool) -> dict[str, Any]:
    """What Session.session_object() gives for BETA_SESSION."""
    if ga:
        return session_to_ga(BETA_SESSION)
    return {key: value for key, value in BETA_SESSION.items() if key != "model"}


def _assistant(status: str, audio: bool, text: str) -> dict[str, Any]:
    content = [] if status == "in_progress" else [events.assistant_part(audio, text)]
    return events.message_item(ITEM, "assistant", status, content)


def _response(status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    fields = {
        "conversation_id": "conv_golden",
        "output_modalities": ["audio"],
        "max_output_tokens": 256,
        "audio": {"output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "af"}},
        "metadata": None,
    }
    return {**events.response_object(RESP, status, output, **extra), **fields}


def _function_call(status: str, arguments: str) -> dict[str, Any]:
    return events.function_call_item("item_call", status, CALL, "get_weather", arguments)


def cases(ga: bool) -> list[tuple[str, Any]]:
    """(name, event) for every kind of server event, some in several shapes."""
    usage = events.response_usage(120, 30, 64)
    audio_done = _assistant("completed", True, "It is blue.")
    text_done = _assistant("completed", False, "It is blue.")
    user_text = events.message_item(
        USER, "user", "completed", [{"type": "input_text", "text": "hi"}]
    )
    user_audio = events.message_item(
        USER, "user", "completed", [{"type": "input_audio", "transcript": None}]
    )
    system = events.message_item(
        "item_sys", "system", "completed", [{"type": "input_text", "text": "s"}]
    )
    call_output = events.function_call_output_item("item_out", CALL, '{"sky": "blue"}')
    sess = session_object(ga)
    return [
        # session.py
        ("session.created", events.event("session.created", session=sess)),
        ("session.updated", events.event("session.updated", session=sess)),
        ("error", events.error("invalid_value", "bad", param="session.voice", event_id="evt_c")),
        ("error.server", events.error("server_error", "oops", kind="server_error")),
        ("error.oversized", events.error("message_too_large", "too big")),
        ("input_audio_buffer.cleared", events.event("input_audio_buffer.cleared")),
        ("conversation.item.deleted", events.item_deleted(USER)),
        (
            "conversation.item.retrieved",
            events.event("conversation.item.retrieved", item=text_done),
        ),
        (
            "conversation.item.retrieved.user",
            events.event("conversation.item.retrieved", item=user_text),
        ),
        ("conversation.item.created.user_text", events.item_created(None, user_text)),
        ("conversation.item.created.call_output", events.item_created(ITEM, call_output)),
        (
            "conversation.item.truncated",
            events.event(
                "conversation.item.truncated", item_id=ITEM, content_index=0, audio_end_ms=1500
            ),
        ),
        # turns/
        ("speech_started", events.speech_edge("started", 16_000, USER)),
        ("speech_stopped", events.speech_edge("stopped", 48_000, USER)),
        (
            "input_audio_buffer.committed",
            events.event("input_audio_buffer.committed", previous_item_id=ITEM, item_id=USER),
        ),
        ("conversation.item.created.user_audio", events.item_created(ITEM, user_audio)),
        (
            "input_audio_buffer.timeout_triggered",
            events.event(
                "input_audio_buffer.timeout_triggered",
                audio_start_ms=1000,
                audio_end_ms=6000,
                item_id=USER,
            ),
        ),
        ("transcription.delta", events.transcription("delta", USER, delta="hel")),
        (
            "transcription.completed",
            events.transcription(
                "completed",
                USER,
                transcript="hello",
                usage={"type": "duration", "seconds": 1.25},
                language="en",
            ),
        ),
        (
            "transcription.completed.nudge",
            events.transcription(
                "completed", USER, transcript="", usage={"type": "duration", "seconds": 5.0}
            ),
        ),
        (
            "transcription.failed",
            events.transcription(
                "failed",
                USER,
                error={"type": "server_error", "code": "asr_failed", "message": "x"},
            ),
        ),
        (
            "r1voice.interruption",
            events.event("r1voice.interruption", item_id=ITEM, verdict="backchannel"),
        ),
        # responses/response.py
        (
            "response.created",
            events.event("response.created", response=_response("in_progress", [])),
        ),
        (
            "response.output_item.added",
            events.event(
                "response.output_item.added",
                response_id=RESP,
                output_index=0,
                item=_assistant("in_progress", True, ""),
            ),
        ),
        (
            "conversation.item.created.assistant",
            events.item_created(USER, _assistant("in_progress", True, "")),
        ),
        ("rate_limits.updated", events.rate_limits(8192, 7000)),
        (
            "response.content_part.added",
            events.event(
                "response.content_part.added",
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                part=events.assistant_part(True, ""),
            ),
        ),
        (
            "r1voice.reasoning.delta",
            events.event("r1voice.reasoning.delta", response_id=RESP, item_id=ITEM, delta="hmm"),
        ),
        (
            "r1voice.reasoning.done",
            events.event("r1voice.reasoning.done", response_id=RESP, item_id=ITEM, cut=True),
        ),
        (
            "response.audio_transcript.delta",
            events.event(
                "response.audio_transcript.delta",
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                delta="It ",
            ),
        ),
        (
            "response.text.delta",
            events.event(
                "response.text.delta",
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                delta="It ",
            ),
        ),
        (
            "response.audio.delta",
            events.event(
                "response.audio.delta",
                response_id=RESP,
                delta=events.encode_base64(b"\x00\x01\x02\x03"),
                **AUDIO_AT,
            ),
        ),
        ("response.audio.done", events.event("response.audio.done", response_id=RESP, **AUDIO_AT)),
        (
            "response.audio_transcript.done",
            events.event(
                "response.audio_transcript.done",
                response_id=RESP,
                transcript="It is blue.",
                **AUDIO_AT,
            ),
        ),
        (
            "response.text.done",
            events.event("response.text.done", response_id=RESP, text="It is blue.", **AUDIO_AT),
        ),
        (
            "response.content_part.done",
            events.event(
                "response.content_part.done",
                response_id=RESP,
                part=events.assistant_part(True, "It is blue."),
                **AUDIO_AT,
            ),
        ),
        (
            "response.content_part.done.text",
            events.event(
                "response.content_part.done",
                response_id=RESP,
                part=events.assistant_part(False, "It is blue."),
                **AUDIO_AT,
            ),
        ),
        (
            "response.output_item.done",
            events.event(
                "response.output_item.done", response_id=RESP, output_index=0, item=audio_done
            ),
        ),
        ("conversation.item.done", events.event("conversation.item.done", item=audio_done)),
        ("conversation.item.done.text", events.event("conversation.item.done", item=text_done)),
        (
            "response.done",
            events.event(
                "response.done",
                response=_response(
                    "completed", [audio_done, _function_call("completed", "{}")], usage=usage
                ),
            ),
        ),
        (
            "response.done.cancelled",
            events.event(
                "response.done",
                response=_response(
                    "cancelled",
                    [_assistant("incomplete", False, "It")],
                    status_details={"type": "cancelled", "reason": "turn_detected"},
                ),
            ),
        ),
        (
            "response.done.failed",
            events.event(
                "response.done",
                response=_response(
                    "failed",
                    [text_done],
                    status_details={
                        "type": "failed",
                        "error": {"code": "llm_error", "message": "x"},
                    },
                ),
            ),
        ),
        (
            "r1voice.turn.metrics",
            events.turn_metrics(
                RESP,
                {
                    "transcript": 0.1,
                    "first_token": 0.25,
                    "first_clause": None,
                    "first_audio": 0.51234,
                },
                1234.56,
                "completed",
                "en",
            ),
        ),
        # responses/function_calls.py
        (
            "response.output_item.added.function_call",
            events.event(
                "response.output_item.added",
                response_id=RESP,
                output_index=1,
                item=_function_call("in_progress", ""),
            ),
        ),
        (
            "conversation.item.created.function_call",
            events.item_created(ITEM, _function_call("in_progress", "")),
        ),
        (
            "response.function_call_arguments.delta",
            events.event(
                "response.function_call_arguments.delta",
                call_id=CALL,
                delta='{"city": "Paris"}',
                response_id=RESP,
                item_id="item_call",
                output_index=1,
            ),
        ),
        (
            "response.function_call_arguments.done",
            events.event(
                "response.function_call_arguments.done",
                call_id=CALL,
                name="get_weather",
                arguments='{"city": "Paris"}',
                response_id=RESP,
                item_id="item_call",
                output_index=1,
            ),
        ),
        (
            "response.output_item.done.function_call",
            events.event(
                "response.output_item.done",
                response_id=RESP,
                output_index=1,
                item=_function_call("completed", '{"city": "Paris"}'),
            ),
        ),
        (
            "conversation.item.done.function_call",
            events.event("conversation.item.done", item=_function_call("completed", "{}")),
        ),
        ("error.tool_call", events.error("invalid_tool_call", "not JSON", kind="server_error")),
        # history_summary.py
        ("conversation.item.created.summary", events.item_created(ITEM, system)),
        ("error.summary", events.error("summary_failed", "failed", kind="server_error")),
        # server/webrtc/output_track.py
        (
            "output_audio_buffer.started",
            events.event("output_audio_buffer.started", response_id=RESP),
        ),
        (
            "output_audio_buffer.stopped",
            events.event("output_audio_buffer.stopped", response_id=RESP),
        ),
        (
            "output_audio_buffer.cleared",
            events.event("output_audio_buffer.cleared", response_id=RESP),
        ),
        # server/session_runner.py
        ("error.expired", events.error("session_expired", "the session reached its maximum age")),
    ]
