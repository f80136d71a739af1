"""A recording's tracks: pieces laid where they played, cut where playback stopped."""

from __future__ import annotations

import numpy as np

from app.recording.tracks import Track, stereo


def tone(n: int, value: float = 0.5) -> np.ndarray:
    return np.full(n, value, np.float32)


def test_pieces_play_one_after_another_never_before_they_came() -> None:
    track = Track()
    track.add(100, tone(50))
    track.add(120, tone(30))  # came while the first still played: after it
    track.add(400, tone(10))  # came later: at its time
    assert [(p.start, p.end) for p in track.pieces] == [(100, 150), (150, 180), (400, 410)]
    rendered = track.render(420)
    assert np.count_nonzero(rendered) == 90
    assert rendered[99] == 0 and rendered[100] == 16383  # 0.5 of full scale


def test_a_cut_keeps_what_played_of_that_item_only() -> None:
    track = Track()
    track.add(0, tone(100), "item_a")
    track.add(0, tone(100), "item_b")  # queued after item_a: 100..200
    track.cut(150, "item_b")
    assert [(p.item_id, p.start, p.end) for p in track.pieces] == [
        ("item_a", 0, 100),
        ("item_b", 100, 150),
    ]
    assert track.end == 150  # the next answer starts where this one stopped
    track.cut(40)  # any item
    assert [(p.start, p.end) for p in track.pieces] == [(0, 40)]
    assert track.item_start("item_b") is None


def test_stereo_puts_the_user_left_and_the_assistant_right() -> None:
    user, assistant = Track(), Track()
    user.add(0, tone(10, 0.25))
    assistant.add(20, tone(5, -0.5))
    frames = stereo(user, assistant)
    assert frames.shape == (25, 2)
    assert np.count_nonzero(frames[:, 0]) == 10 and np.count_nonzero(frames[:, 1]) == 5
    assert frames[20, 1] == -16383 and frames[20, 0] == 0
