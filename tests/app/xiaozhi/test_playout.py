"""A board's playout: messages and frames leave in order, frames cut off are dropped
but the messages among them still go, and a board that stops reading is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.xiaozhi.playout import LEAD_MS, MAX_QUEUED, REALTIME_LEAD_MS, Playout
from app.xiaozhi.replies import Replies


def test_items_leave_in_order_and_a_drop_keeps_the_messages() -> None:
    sent: list[Any] = []

    async def run() -> None:
        gate = asyncio.Event()

        async def send_json(message: dict[str, Any]) -> None:
            await gate.wait()  # the board's socket is busy until the test opens it
            sent.append(message)

        async def send_opus(packet: bytes) -> None:
            sent.append(packet)

        out = Playout(send_json, send_opus, frame_ms=60, lead_ms=10_000)
        out.put({"type": "tts", "state": "start"})
        for i in range(5):
            out.put(bytes([i]))
        out.put({"type": "tts", "state": "sentence_start", "text": "Hi."})
        out.put(b"\x09")
        await asyncio.sleep(0)
        out.drop()  # the frames still queued are dropped, the sentence still shows
        out.put({"type": "tts", "state": "stop"})
        gate.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert out.frames_sent == 0
        out.close()

    asyncio.run(run())
    assert sent == [
        {"type": "tts", "state": "start"},
        {"type": "tts", "state": "sentence_start", "text": "Hi."},
        {"type": "tts", "state": "stop"},
    ]


def test_frames_within_the_lead_go_at_once() -> None:
    sent: list[bytes] = []

    async def run() -> None:
        async def send_json(message: dict[str, Any]) -> None:
            pass

        async def send_opus(packet: bytes) -> None:
            sent.append(packet)

        out = Playout(send_json, send_opus, frame_ms=60, lead_ms=120, clock=lambda: 100.0)
        for i in range(4):
            out.put(bytes([i]))
        for _ in range(20):
            await asyncio.sleep(0)
        out.close()

    asyncio.run(run())
    # a clock that never moves: a frame goes while it starts at most the lead (120 ms)
    # after the playback's start: the first three (at 0, 60 and 120 ms), not the fourth
    assert sent == [b"\x00", b"\x01", b"\x02"]


def test_a_board_that_stops_reading_is_refused() -> None:
    async def run() -> None:
        async def never(item: Any) -> None:
            await asyncio.Event().wait()

        out = Playout(never, never, frame_ms=60)
        with pytest.raises(ConnectionError, match="has not read"):
            for _ in range(MAX_QUEUED + 2):
                out.put({"type": "tts"})
        out.close()

    asyncio.run(run())


def test_a_hold_stops_the_board_at_once_and_release_plays_on_from_the_held_frame() -> None:
    sent: list[Any] = []
    now = [100.0]

    async def run() -> None:
        async def send_json(message: dict[str, Any]) -> None:
            sent.append(message)

        async def send_opus(packet: bytes) -> None:
            sent.append(packet)

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        out = Playout(send_json, send_opus, frame_ms=60, lead_ms=120, clock=lambda: now[0])
        for i in range(6):
            out.put(bytes([i]))
        await settle()
        assert sent == [b"\x00", b"\x01", b"\x02"]  # 0-180 ms: the lead's worth
        now[0] += 0.07  # frame 0 has played, frame 1 plays: 1 and 2 are unplayed
        assert out.playing
        out.hold({"type": "tts", "state": "stop"})
        await settle()
        assert sent[3:] == [{"type": "tts", "state": "stop"}]  # ahead of any frame
        out.put({"type": "tts", "state": "sentence_start", "text": "On."})
        await settle()
        assert len(sent) == 4  # held: the sentence waits behind the held frames
        out.release({"type": "tts", "state": "start"})
        await settle()
        # the board plays on from the first frame it had not played, after `tts start`
        assert sent[4:] == [{"type": "tts", "state": "start"}, b"\x01", b"\x02", b"\x03"]
        out.hold({"type": "tts", "state": "stop"})
        out.drop()  # the sound was a barge-in: the held frames go, the message still shows
        out.release()
        await settle()
        assert sent[8:] == [
            {"type": "tts", "state": "stop"},
            {"type": "tts", "state": "sentence_start", "text": "On."},
        ]
        assert not out.playing  # the board dropped what it held; nothing waits here
        out.close()

    asyncio.run(run())


def test_a_board_listening_over_the_answer_is_sent_less_ahead() -> None:
    sent: list[bytes] = []

    async def run() -> None:
        async def send_json(message: dict[str, Any]) -> None:
            pass

        async def send_opus(packet: bytes) -> None:
            sent.append(packet)

        replies = Replies("sess", send_json, send_opus)
        replies.listening(realtime=True)  # what `listen` start in realtime mode sets
        out = replies._out
        assert out.lead_ms == REALTIME_LEAD_MS
        out._clock = lambda: 100.0  # a clock that never moves
        for i in range(4):
            out.put(bytes([i]))
        for _ in range(20):
            await asyncio.sleep(0)
        replies.listening(realtime=False)
        assert out.lead_ms == LEAD_MS
        replies.close()

    asyncio.run(run())
    assert sent == [b"\x00", b"\x01"]  # at 0 and 60 ms: one frame ahead, not two
