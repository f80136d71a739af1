"""What the client is told of a response: the events that open and close its message,
and the response object, which names the voice an `auto` answer was spoken in."""

from __future__ import annotations

from app.llm import GenerationParams
from app.protocol.server_events import (
    AudioDone,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    ItemCreated,
    OutputItemAdded,
    OutputItemDone,
    ResponseCreated,
    ServerEvent,
    TextDone,
)
from app.protocol.session_schema import AudioFormat
from app.realtime.responses.report import ResponseReport
from app.realtime.responses.spec import ResponseSpec
from app.speech.voices import AUTO


def report(
    audio: bool, in_conversation: bool = True, voice: str = "v"
) -> tuple[ResponseReport, list[ServerEvent]]:
    spec = ResponseSpec(
        audio=audio,
        instructions="",
        params=GenerationParams(max_tokens=16),
        voice=voice,
        speed=1.0,
        output_format=AudioFormat(),
        in_conversation=in_conversation,
    )
    sent: list[ServerEvent] = []
    return ResponseReport(
        ("resp_1", "item_1"), spec, "conv_1", sent.append, lambda: "af_heart"
    ), sent


def test_a_response_opens_its_message_after_the_item_it_follows() -> None:
    r, sent = report(audio=True)
    r.opened("user1")
    assert [type(e) for e in sent] == [
        ResponseCreated,
        OutputItemAdded,
        ItemCreated,
        ContentPartAdded,
    ]
    assert sent[2]["previous_item_id"] == "user1" and sent[2]["item"]["status"] == "in_progress"
    out_of_band, sent = report(audio=False, in_conversation=False)
    out_of_band.opened(None)
    assert ItemCreated not in [type(e) for e in sent]


def test_the_message_closes_with_its_text_and_its_status() -> None:
    spoken, sent = report(audio=True)
    spoken.message_done("It is blue.", "incomplete")
    assert [type(e) for e in sent] == [
        AudioDone,
        AudioTranscriptDone,
        ContentPartDone,
        OutputItemDone,
    ]
    assert sent[-1]["item"]["status"] == "incomplete"
    assert sent[-1]["item"]["content"] == [{"type": "audio", "transcript": "It is blue."}]
    written, sent = report(audio=False)
    written.message_done("Hi.", "completed")
    assert [type(e) for e in sent][:2] == [TextDone, ContentPartDone]


def test_the_response_object_names_the_voice_an_auto_answer_was_spoken_in() -> None:
    auto, _ = report(audio=True, voice=AUTO)
    fixed, _ = report(audio=True, voice="v")
    assert auto.response("completed", [])["audio"]["output"]["voice"] == "af_heart"
    assert fixed.response("completed", [])["audio"]["output"]["voice"] == "v"
    assert auto.response("completed", [])["conversation_id"] == "conv_1"
