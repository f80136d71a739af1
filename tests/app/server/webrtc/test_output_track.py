"""The outgoing track's bookkeeping: what played of each answer, and the
output_audio_buffer events, frame by frame (no network: frames are taken directly)."""

from __future__ import annotations

import asyncio
from typing import Any

from app.protocol.schemas import AudioFormat
from app.server.webrtc.output_track import FRAME_BYTES, FRAME_MS, OutputTrack

PCM = AudioFormat(type="audio/pcm", rate=24_000)


def _track() -> tuple[OutputTrack, list[dict[str, Any]]]:
    track, seen = OutputTrack(), []
    track.attach(seen.append)
    return track, seen


def _kinds(seen: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"].removeprefix("output_audio_buffer."), e["response_id"]) for e in seen]


def _frames(track: OutputTrack, count: int) -> list[bytes]:
    async def take() -> list[bytes]:
        return [bytes((await track.recv()).planes[0])[:FRAME_BYTES] for _ in range(count)]

    return asyncio.run(take())


def test_an_answer_plays_then_stops_after_finish() -> None:
    track, seen = _track()
    playout = track.playout("resp_1")
    playout.play(b"\x01\x00" * (FRAME_BYTES // 2) * 3, PCM, 0.0)  # three frames
    playout.finish()
    assert playout.played_ms() is None and seen == []
    frames = _frames(track, 4)
    assert [f != bytes(FRAME_BYTES) for f in frames] == [True, True, True, False]
    assert playout.played_ms() == 3 * FRAME_MS
    assert _kinds(seen) == [("started", "resp_1"), ("stopped", "resp_1")]


def test_stop_drops_the_rest_at_once_and_says_cleared() -> None:
    track, seen = _track()
    playout = track.playout("resp_1")
    playout.play(b"\x01\x00" * (FRAME_BYTES // 2) * 10, PCM, 500.0)
    _frames(track, 2)
    playout.stop()
    assert playout.played_ms() == 500.0 + 2 * FRAME_MS  # where it was, on its timeline
    assert all(f == bytes(FRAME_BYTES) for f in _frames(track, 3))  # silence after
    assert _kinds(seen) == [("started", "resp_1"), ("cleared", "resp_1")]


def test_a_hold_sends_silence_and_release_plays_on_from_the_same_sample() -> None:
    """Speech began over the answer: silence from the next frame, nothing dropped, no
    event; a cough (released) loses no sample of the answer."""
    track, seen = _track()
    playout = track.playout("resp_1")
    frames = [bytes([n + 1, 0]) * (FRAME_BYTES // 2) for n in range(4)]  # each its own
    playout.play(b"".join(frames), PCM, 0.0)
    assert _frames(track, 1) == frames[:1]
    track.hold()
    assert _frames(track, 3) == [bytes(FRAME_BYTES)] * 3
    assert playout.played_ms() == FRAME_MS  # what was heard: the frame before the hold
    track.release()
    assert _frames(track, 4) == [*frames[1:], bytes(FRAME_BYTES)]
    assert _kinds(seen) == [("started", "resp_1")]


def test_a_stop_while_held_drops_the_answer_where_it_held() -> None:
    """A barge-in: held at the speech's start, stopped at the hold; the answer was heard
    up to the hold, and a resumed answer plays once released."""
    track, seen = _track()
    playout = track.playout("resp_1")
    playout.play(b"\x01\x00" * (FRAME_BYTES // 2) * 10, PCM, 0.0)
    _frames(track, 2)
    track.hold()
    _frames(track, 5)
    playout.stop()
    assert playout.played_ms() == 2 * FRAME_MS
    track.release()
    playout.play(b"\x02\x00" * (FRAME_BYTES // 2), PCM, 2 * FRAME_MS)  # resumed
    assert _frames(track, 1) == [b"\x02\x00" * (FRAME_BYTES // 2)]
    assert _kinds(seen) == [("started", "resp_1"), ("cleared", "resp_1"), ("started", "resp_1")]


def test_clear_names_the_last_answer_that_played() -> None:
    track, seen = _track()
    track.clear()  # none ever played: the event would name no answer
    assert seen == []
    playout = track.playout("resp_1")
    playout.play(b"\x01\x00" * (FRAME_BYTES // 2), PCM, 0.0)
    playout.finish()
    _frames(track, 1)
    track.clear()  # played to its end already: still confirmed, naming it
    assert _kinds(seen) == [("started", "resp_1"), ("stopped", "resp_1"), ("cleared", "resp_1")]


def test_a_next_answer_ends_the_one_before() -> None:
    track, seen = _track()
    one, two = track.playout("resp_1"), track.playout("resp_2")
    one.play(b"\x01\x00" * (FRAME_BYTES // 2), PCM, 0.0)
    two.play(b"\x01\x00" * (FRAME_BYTES // 2), PCM, 0.0)
    two.finish()
    _frames(track, 2)
    assert _kinds(seen) == [
        ("started", "resp_1"),
        ("stopped", "resp_1"),
        ("started", "resp_2"),
        ("stopped", "resp_2"),
    ]


def test_other_formats_are_converted_to_the_track_rate() -> None:
    track, _seen = _track()
    playout = track.playout("resp_1")
    playout.play(b"\xff" * 160, AudioFormat(type="audio/pcmu", rate=8000), 0.0)  # 20 ms
    _frames(track, 1)
    played = playout.played_ms()
    assert played is not None and abs(played - FRAME_MS) < 1
