"""The outgoing track's bookkeeping: what played of each answer, and the
output_audio_buffer events, frame by frame (no network: frames are taken directly)."""

from __future__ import annotations

import asyncio
from fractions import Fraction
from typing import Any

import numpy as np

from app.audio import float_to_pcm16
from app.protocol.session_schema import AudioFormat
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
        return [await track.next_pcm() for _ in range(count)]

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


def test_frames_go_out_as_opus_packets_each_as_it_is_taken() -> None:
    """One Opus packet a 20 ms frame, stamped on the 48 kHz RTP clock: a 440 Hz tone,
    decoded as a browser decodes it, comes out in the frames it was taken in, at its
    level, 2.5 ms late (restricted low delay's lookahead; aiortc's `voip` encoder's was
    6.5 ms), and silence after it."""
    from av import CodecContext, Packet

    track, _seen = _track()
    playout = track.playout("resp_1")
    t = np.arange(FRAME_BYTES // 2 * 5) / 24_000
    playout.play(float_to_pcm16(0.5 * np.sin(2 * np.pi * 440 * t)), PCM, 0.0)

    async def take() -> list[Any]:
        return [await track.recv() for _ in range(7)]

    packets = asyncio.run(take())
    assert [p.pts for p in packets] == [960 * n for n in range(7)]
    assert {p.time_base for p in packets} == {Fraction(1, 48_000)}
    decoder = CodecContext.create("libopus", "r")
    decoder.format, decoder.layout, decoder.sample_rate = "s16", "stereo", 48_000
    frames = [f for p in packets for f in decoder.decode(Packet(bytes(p)))]
    assert [f.samples for f in frames] == [960] * 7
    mono = np.concatenate([f.to_ndarray().reshape(-1, 2)[:, 0] for f in frames])
    audio = mono.astype(np.float32) / 32768
    onset = int(np.argmax(np.abs(audio) > 0.05))
    assert 100 <= onset <= 130, onset  # 2.5 ms at 48 kHz is 120 samples
    levels = [float(np.sqrt(np.mean(audio[n * 960 : (n + 1) * 960] ** 2))) for n in range(7)]
    # the tone's RMS (0.354) in its frames after the first (2.5 ms of it silence), the
    # tone's last 2.5 ms in the sixth, then silence
    assert all(0.3 < level < 0.4 for level in levels[1:5]), levels
    assert levels[6] < 0.01, levels


def test_an_answer_that_comes_during_silence_goes_out_without_waiting_for_the_tick(
    monkeypatch: Any,
) -> None:
    """Silence set the clock; the answer's first frame leaves on its arrival, not at the
    next tick (here a tick 20 s away, so a wait for it cannot pass for a wake-up)."""
    monkeypatch.setattr("app.server.webrtc.output_track.FRAME_S", 20.0)
    track, seen = _track()
    audio = b"\x01\x00" * (FRAME_BYTES // 2)

    async def run() -> bytes:
        assert await track.next_pcm() == bytes(FRAME_BYTES)  # the clock starts: silence
        pending = asyncio.ensure_future(track.next_pcm())  # waits for the tick
        await asyncio.sleep(0.05)
        assert not pending.done()
        track.playout("resp_1").play(audio, PCM, 0.0)
        return await asyncio.wait_for(pending, 10.0)

    assert asyncio.run(run()) == audio
    assert _kinds(seen) == [("started", "resp_1")]


def test_a_release_with_nothing_queued_waits_for_the_tick(monkeypatch: Any) -> None:
    monkeypatch.setattr("app.server.webrtc.output_track.FRAME_S", 20.0)
    track, _ = _track()

    async def run() -> bool:
        await track.next_pcm()
        pending = asyncio.ensure_future(track.next_pcm())
        await asyncio.sleep(0.05)
        track.release()  # wakes the wait, but there is nothing to send early
        await asyncio.sleep(0.2)
        done = pending.done()
        pending.cancel()
        return done

    assert asyncio.run(run()) is False
