"""Twilio's messages as its docs show them, read; what is wrong with one, named."""

from __future__ import annotations

import base64
import json

import pytest

from app.telephony import twilio_messages
from app.telephony.twilio_messages import Dtmf, Mark, Media, Other, Start, StreamError, parse

SID = "MZ18ad3ab5a668481ce02b83e7395059f0"
START = {  # Twilio's documented `start` (its example's ids)
    "event": "start",
    "sequenceNumber": "1",
    "start": {
        "accountSid": "AC123",
        "streamSid": SID,
        "callSid": "CA123",
        "tracks": ["inbound"],
        "customParameters": {"From": "+15550001111"},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    },
    "streamSid": SID,
}


def test_documented_messages_are_read() -> None:
    connected = {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    assert parse(json.dumps(connected), None) == Other("connected")
    assert parse(json.dumps(START), None) == Start(SID, "CA123", {"From": "+15550001111"})
    frame = bytes(range(160))
    media = {
        "event": "media",
        "sequenceNumber": "3",
        "media": {"track": "inbound", "chunk": "1", "timestamp": "5", "payload": ""},
        "streamSid": SID,
    }
    media["media"]["payload"] = base64.b64encode(frame).decode()  # type: ignore[index]
    assert parse(json.dumps(media), SID) == Media(frame)
    mark = {"event": "mark", "sequenceNumber": "4", "streamSid": SID, "mark": {"name": "m1"}}
    assert parse(json.dumps(mark), SID) == Mark("m1")
    dtmf = {"event": "dtmf", "streamSid": SID, "dtmf": {"track": "inbound_track", "digit": "#"}}
    assert parse(json.dumps(dtmf), SID) == Dtmf("#")
    stop = {"event": "stop", "streamSid": SID, "stop": {"accountSid": "AC1", "callSid": "CA1"}}
    assert parse(json.dumps(stop), SID) == Other("stop")


def test_what_we_send_is_twilios_shape() -> None:
    assert json.loads(twilio_messages.media(SID, b"\xff" * 160)) == {
        "event": "media",
        "streamSid": SID,
        "media": {"payload": base64.b64encode(b"\xff" * 160).decode()},
    }
    assert json.loads(twilio_messages.mark(SID, "a")) == {
        "event": "mark",
        "streamSid": SID,
        "mark": {"name": "a"},
    }
    assert json.loads(twilio_messages.clear(SID)) == {"event": "clear", "streamSid": SID}


@pytest.mark.parametrize(
    ("start", "code", "words"),
    [
        ({"streamId": "s", "callId": "c"}, "unsupported_provider", "Plivo"),
        (
            {"stream_sid": "s", "call_sid": "c", "account_sid": "a"},
            "unsupported_provider",
            "Exotel",
        ),
        ({"streamSid": SID}, "invalid_start", "callSid"),
    ],
)
def test_other_providers_and_broken_starts_are_named(start: dict, code: str, words: str) -> None:
    with pytest.raises(StreamError) as refused:
        parse(json.dumps({"event": "start", "start": start}), None)
    assert refused.value.code == code and words in refused.value.message


def test_a_second_start_and_a_bad_key_are_refused() -> None:
    with pytest.raises(StreamError, match="second"):
        parse(json.dumps(START), SID)
    dtmf = {"event": "dtmf", "streamSid": SID, "dtmf": {"digit": "x"}}
    with pytest.raises(StreamError, match="keypad"):
        parse(json.dumps(dtmf), SID)


def test_telnyx_streams_are_told_apart_and_read() -> None:
    fmt = {"encoding": "PCMU", "sample_rate": 8000, "channels": 1}
    start = {
        "event": "start",
        "stream_id": "32DE",
        "start": {"call_control_id": "v3:c", "media_format": fmt},
    }
    assert parse(json.dumps(start), None) == Start("32DE", "v3:c", {}, "telnyx")
    frame = bytes(320)  # a 40 ms packet: Telnyx frames follow the call's packets
    media = {
        "event": "media",
        "stream_id": "32DE",
        "media": {"payload": base64.b64encode(frame).decode()},
    }
    assert parse(json.dumps(media), "32DE", "telnyx") == Media(frame)
    with pytest.raises(StreamError, match="stream_id"):
        parse(json.dumps({**media, "stream_id": "other"}), "32DE", "telnyx")
    pcma = {
        **start,
        "start": {"call_control_id": "v3:c", "media_format": {**fmt, "encoding": "PCMA"}},
    }
    with pytest.raises(StreamError, match="PCMU"):
        parse(json.dumps(pcma), None)
    assert json.loads(twilio_messages.clear("32DE", "telnyx")) == {"event": "clear"}
    assert json.loads(twilio_messages.mark("32DE", "a", "telnyx")) == {
        "event": "mark",
        "mark": {"name": "a"},
    }
