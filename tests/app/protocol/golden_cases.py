"""Every server event the server sends, with its fields as the call sites fill them and
fixed ids.

The golden wire test (test_wire_golden.py) serialises these through the Outbox in both
dialects and compares with the JSON recorded before server events became types, so a
change of any event's wire form shows up as a diff. Each case names where it is sent.
"""

from __future__ import annotations

from typing import Any

from app.protocol import events
from app.protocol.dialect import session_to_ga
from app.protocol.server_events import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    Error,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    InputAudioCleared,
    InputAudioCommitted,
    InputAudioTimeoutTriggered,
    Interruption,
    ItemCreated,
    ItemDeleted,
    ItemDone,
    ItemRetrieved,
    ItemTruncated,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
    OutputAudioCleared,
    OutputAudioStarted,
    OutputAudioStopped,
    OutputItemAdded,
    OutputItemDone,
    RateLimitsUpdated,
    ReasoningDelta,
    ReasoningDone,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    SessionUpdated,
    SpeechStarted,
    SpeechStopped,
    TextDelta,
    TextDone,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionFailed,
    TurnMetrics,
)

RESP, ITEM, USER, CALL = "resp_golden", "item_golden", "item_user", "call_golden"


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
        ("session.created", SessionCreated(session=sess)),
        ("session.updated", SessionUpdated(session=sess)),
        (
            "error",
            Error(
                code="invalid_value", message="bad", param="session.voice", client_event_id="evt_c"
            ),
        ),
        ("error.server", Error(code="server_error", message="oops", kind="server_error")),
        ("error.oversized", Error(code="message_too_large", message="too big")),
        ("input_audio_buffer.cleared", InputAudioCleared()),
        ("conversation.item.deleted", ItemDeleted(item_id=USER)),
        (
            "conversation.item.retrieved",
            ItemRetrieved(item=text_done),
        ),
        (
            "conversation.item.retrieved.user",
            ItemRetrieved(item=user_text),
        ),
        ("conversation.item.created.user_text", ItemCreated(previous_item_id=None, item=user_text)),
        (
            "conversation.item.created.call_output",
            ItemCreated(previous_item_id=ITEM, item=call_output),
        ),
        (
            "conversation.item.truncated",
            ItemTruncated(item_id=ITEM, content_index=0, audio_end_ms=1500),
        ),
        # turns/
        ("speech_started", SpeechStarted(item_id=USER, audio_start_ms=1000)),
        ("speech_stopped", SpeechStopped(item_id=USER, audio_end_ms=3000)),
        (
            "input_audio_buffer.committed",
            InputAudioCommitted(previous_item_id=ITEM, item_id=USER),
        ),
        (
            "conversation.item.created.user_audio",
            ItemCreated(previous_item_id=ITEM, item=user_audio),
        ),
        (
            "input_audio_buffer.timeout_triggered",
            InputAudioTimeoutTriggered(
                audio_start_ms=1000,
                audio_end_ms=6000,
                item_id=USER,
            ),
        ),
        ("transcription.delta", TranscriptionDelta(item_id=USER, delta="hel")),
        (
            "transcription.completed",
            TranscriptionCompleted(
                item_id=USER,
                transcript="hello",
                usage={"type": "duration", "seconds": 1.25},
                language="en",
            ),
        ),
        (
            "transcription.completed.nudge",
            TranscriptionCompleted(
                item_id=USER, transcript="", usage={"type": "duration", "seconds": 5.0}
            ),
        ),
        (
            "transcription.failed",
            TranscriptionFailed(
                item_id=USER,
                error={"type": "server_error", "code": "asr_failed", "message": "x"},
            ),
        ),
        (
            "r1voice.interruption",
            Interruption(item_id=ITEM, verdict="backchannel"),
        ),
        # responses/response.py
        (
            "response.created",
            ResponseCreated(response=_response("in_progress", [])),
        ),
        (
            "response.output_item.added",
            OutputItemAdded(
                response_id=RESP,
                output_index=0,
                item=_assistant("in_progress", True, ""),
            ),
        ),
        (
            "conversation.item.created.assistant",
            ItemCreated(previous_item_id=USER, item=_assistant("in_progress", True, "")),
        ),
        ("rate_limits.updated", RateLimitsUpdated(context_tokens=8192, remaining_tokens=7000)),
        (
            "response.content_part.added",
            ContentPartAdded(
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                part=events.assistant_part(True, ""),
            ),
        ),
        (
            "r1voice.reasoning.delta",
            ReasoningDelta(response_id=RESP, item_id=ITEM, delta="hmm"),
        ),
        (
            "r1voice.reasoning.done",
            ReasoningDone(response_id=RESP, item_id=ITEM, cut=True),
        ),
        (
            "response.audio_transcript.delta",
            AudioTranscriptDelta(
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                delta="It ",
            ),
        ),
        (
            "response.text.delta",
            TextDelta(
                response_id=RESP,
                item_id=ITEM,
                output_index=0,
                content_index=0,
                delta="It ",
            ),
        ),
        (
            "response.audio.delta",
            AudioDelta(
                response_id=RESP,
                delta=events.encode_base64(b"\x00\x01\x02\x03"),
                item_id=ITEM,
                output_index=0,
                content_index=0,
            ),
        ),
        (
            "response.audio.done",
            AudioDone(response_id=RESP, item_id=ITEM, output_index=0, content_index=0),
        ),
        (
            "response.audio_transcript.done",
            AudioTranscriptDone(
                response_id=RESP,
                transcript="It is blue.",
                item_id=ITEM,
                output_index=0,
                content_index=0,
            ),
        ),
        (
            "response.text.done",
            TextDone(
                response_id=RESP, text="It is blue.", item_id=ITEM, output_index=0, content_index=0
            ),
        ),
        (
            "response.content_part.done",
            ContentPartDone(
                response_id=RESP,
                part=events.assistant_part(True, "It is blue."),
                item_id=ITEM,
                output_index=0,
                content_index=0,
            ),
        ),
        (
            "response.content_part.done.text",
            ContentPartDone(
                response_id=RESP,
                part=events.assistant_part(False, "It is blue."),
                item_id=ITEM,
                output_index=0,
                content_index=0,
            ),
        ),
        (
            "response.output_item.done",
            OutputItemDone(response_id=RESP, output_index=0, item=audio_done),
        ),
        ("conversation.item.done", ItemDone(item=audio_done)),
        ("conversation.item.done.text", ItemDone(item=text_done)),
        (
            "response.done",
            ResponseDone(
                response=_response(
                    "completed", [audio_done, _function_call("completed", "{}")], usage=usage
                ),
            ),
        ),
        (
            "response.done.cancelled",
            ResponseDone(
                response=_response(
                    "cancelled",
                    [_assistant("incomplete", False, "It")],
                    status_details={"type": "cancelled", "reason": "turn_detected"},
                ),
            ),
        ),
        (
            "response.done.failed",
            ResponseDone(
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
            TurnMetrics(
                response_id=RESP,
                stage_seconds={
                    "transcript": 0.1,
                    "first_token": 0.25,
                    "first_clause": None,
                    "first_audio": 0.51234,
                },
                audio_ms=1234.56,
                status="completed",
                language="en",
            ),
        ),
        # responses/function_calls.py
        (
            "response.output_item.added.function_call",
            OutputItemAdded(
                response_id=RESP,
                output_index=1,
                item=_function_call("in_progress", ""),
            ),
        ),
        (
            "conversation.item.created.function_call",
            ItemCreated(previous_item_id=ITEM, item=_function_call("in_progress", "")),
        ),
        (
            "response.function_call_arguments.delta",
            FunctionCallArgumentsDelta(
                call_id=CALL,
                delta='{"city": "Paris"}',
                response_id=RESP,
                item_id="item_call",
                output_index=1,
            ),
        ),
        (
            "response.function_call_arguments.done",
            FunctionCallArgumentsDone(
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
            OutputItemDone(
                response_id=RESP,
                output_index=1,
                item=_function_call("completed", '{"city": "Paris"}'),
            ),
        ),
        (
            "conversation.item.done.function_call",
            ItemDone(item=_function_call("completed", "{}")),
        ),
        (
            "error.tool_call",
            Error(code="invalid_tool_call", message="not JSON", kind="server_error"),
        ),
        # history_summary.py
        ("conversation.item.created.summary", ItemCreated(previous_item_id=ITEM, item=system)),
        ("error.summary", Error(code="summary_failed", message="failed", kind="server_error")),
        # server/webrtc/output_track.py
        (
            "output_audio_buffer.started",
            OutputAudioStarted(response_id=RESP),
        ),
        (
            "output_audio_buffer.stopped",
            OutputAudioStopped(response_id=RESP),
        ),
        (
            "output_audio_buffer.cleared",
            OutputAudioCleared(response_id=RESP),
        ),
        # tools/mcp_toolset.py, realtime/responses/mcp_calls.py
        ("mcp_list_tools.in_progress", McpListToolsInProgress(item_id="item_list")),
        ("mcp_list_tools.completed", McpListToolsCompleted(item_id="item_list")),
        ("mcp_list_tools.failed", McpListToolsFailed(item_id="item_list")),
        (
            "response.mcp_call_arguments.delta",
            McpCallArgumentsDelta(response_id=RESP, item_id="item_mcp", output_index=1, delta="{}"),
        ),
        (
            "response.mcp_call_arguments.done",
            McpCallArgumentsDone(
                response_id=RESP, item_id="item_mcp", output_index=1, arguments="{}"
            ),
        ),
        ("response.mcp_call.in_progress", McpCallInProgress(item_id="item_mcp", output_index=1)),
        ("response.mcp_call.completed", McpCallCompleted(item_id="item_mcp", output_index=1)),
        ("response.mcp_call.failed", McpCallFailed(item_id="item_mcp", output_index=1)),
        # server/session_runner.py
        (
            "error.expired",
            Error(code="session_expired", message="the session reached its maximum age"),
        ),
    ]
