"""The answers' audio on a Twilio stream: 160-byte frames in order, a mark after each
answer, `clear` and the unplayed frames taken back on hold, the place played by a mark's
echo, and a mark echoed after a clear taken for nothing."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from typing import Any

from app.protocol.server_events import OutputAudioCleared, OutputAudioStarted, OutputAudioStopped
from app.protocol.session_schema import AudioFormat
from app.telephony.twilio_playback import TwilioPlayback

ULAW = AudioFormat(type="audio/pcmu", rate=8000)
SID = "MZ1"
SECOND = random.Random(0).randbytes(8000)  # a second of audio, no two frames alike


class Line:
    """What Twilio would receive, decoded; and the session's events."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.events: list[Any] = []

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    def kinds(self) -> list[str]:
        return [m["event"] for m in self.sent]

    def payloads(self) -> bytes:
        return b"".join(base64.b64decode(m["media"]["payload"]) for m in self.sent if "media" in m)


async def _until(check: Any, within_s: float = 5.0) -> None:
    async with asyncio.timeout(within_s):
        # polled: the line is a list the sender appends to, no event says so
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.005)


def test_an_answer_goes_out_in_frames_then_a_mark_whose_echo_ends_it() -> None:
    async def main() -> tuple[Line, float | None]:
        line = Line()
        playback = TwilioPlayback(SID, line.send)
        playback.attach(line.events.append)
        playback.start()
        playout = playback.playout("resp_1")
        audio = bytes(range(256)) * 2 + bytes(88)  # 600 bytes: 3 frames and 120 bytes
        playout.play(audio[:300], ULAW, 0.0)
        playout.play(audio[300:], ULAW, 37.5)
        playout.finish()
        await _until(lambda: "mark" in line.kinds())
        mark = line.sent[-1]["mark"]["name"]
        playback.marked(mark)
        played = playout.played_ms()
        await playback.close()
        return line, played

    line, played = asyncio.run(main())
    assert line.kinds() == ["media"] * 4 + ["mark"]
    assert all(m["streamSid"] == SID for m in line.sent)
    payload = line.payloads()
    assert len(payload) == 640  # four whole frames, the last filled with silence
    assert payload[:600] == bytes(range(256)) * 2 + bytes(88)
    assert payload[600:] == b"\xff" * 40
    assert played == 75.0  # the echo: all 600 bytes (75 ms) played
    assert [type(e) for e in line.events] == [OutputAudioStarted, OutputAudioStopped]


def test_hold_clears_and_release_plays_on_from_the_same_sample() -> None:
    async def main() -> tuple[Line, bytes, list[str]]:
        line = Line()
        playback = TwilioPlayback(SID, line.send)
        playback.attach(line.events.append)
        playback.start()
        playout = playback.playout("resp_1")
        audio = SECOND
        playout.play(audio, ULAW, 0.0)
        await _until(lambda: len(line.sent) >= 10)
        playback.hold()
        await _until(lambda: "clear" in line.kinds())
        held_at = len(line.sent)
        await asyncio.sleep(0.1)
        kinds_while_held = line.kinds()[held_at:]
        playback.release()
        playout.finish()
        await _until(lambda: "mark" in line.kinds(), within_s=10)
        await playback.close()
        cleared = line.kinds().index("clear")
        before = b"".join(base64.b64decode(m["media"]["payload"]) for m in line.sent[:cleared])
        return line, before, kinds_while_held

    line, before, while_held = asyncio.run(main())
    assert while_held == []  # nothing goes out while held
    after = line.payloads()[len(before) :]
    audio = SECOND
    # the frames Twilio had not played (cleared) go out again: the caller hears every
    # sample once, in order, from where the hold found it
    resumed_at = audio.find(after[:160])
    assert 0 < resumed_at <= len(before) and resumed_at % 160 == 0
    assert before[:resumed_at] + after == audio


def test_stop_clears_and_a_cleared_mark_says_nothing() -> None:
    async def main() -> tuple[Line, float | None]:
        line = Line()
        playback = TwilioPlayback(SID, line.send)
        playback.attach(line.events.append)
        playback.start()
        playout = playback.playout("resp_1")
        playout.play(bytes(160 * 3), ULAW, 0.0)
        playout.finish()
        await _until(lambda: "mark" in line.kinds())
        mark = line.sent[-1]["mark"]["name"]
        playout.stop()  # barge-in: Twilio still holds the 60 ms
        await _until(lambda: "clear" in line.kinds())
        playback.marked(mark)  # Twilio echoes the cleared mark: not played
        played = playout.played_ms()
        await playback.close()
        return line, played

    line, played = asyncio.run(main())
    assert line.kinds() == ["media"] * 3 + ["mark", "clear"]
    assert played is None or played < 60.0
    assert [type(e) for e in line.events] == [OutputAudioStarted, OutputAudioCleared]
