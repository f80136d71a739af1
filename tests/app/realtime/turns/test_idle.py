"""The idle timer alone: silence counted in the input stream from the end of playback."""

from __future__ import annotations

from app.audio import PIPELINE_RATE
from app.realtime.turns.idle import IdleTimer, Silence

MS = PIPELINE_RATE // 1000  # stream samples per millisecond
CHUNK = 20 * MS  # a microphone's append


def feed(timer: IdleTimer, start_ms: int, end_ms: int) -> list[Silence]:
    """Silence appended in real time from `start_ms` to `end_ms` of the stream, the stream's
    position t ms arriving at clock time t / 1000; the nudges it triggers."""
    fired = []
    for start in range(start_ms * MS, end_ms * MS, CHUNK):
        end = start + CHUNK
        silence = timer.heard(start, end, arrived_at=end / PIPELINE_RATE, timeout_ms=5000)
        if silence is not None:
            fired.append(silence)
    return fired


def test_silence_counts_from_the_end_of_playback() -> None:
    timer = IdleTimer(max_nudges=2)
    timer.answered(plays_until=3.0)  # the answer's audio plays out 3 s into the stream
    assert feed(timer, 0, 7980) == []  # until 5 s after playback ends, nothing ...
    assert feed(timer, 7980, 8000) == [Silence(3000 * MS, 8000 * MS)]  # ... then one
    assert feed(timer, 8000, 20_000) == []  # not again until another answer ends


def test_at_most_max_nudges_in_a_row_until_the_user_speaks() -> None:
    timer = IdleTimer(max_nudges=2)
    fired = []
    for answer_end in (0, 10, 20):  # each nudge is answered; the third answer gets none
        timer.answered(plays_until=answer_end)
        fired += feed(timer, answer_end * 1000, answer_end * 1000 + 9000)
    assert [s.start_ms for s in fired] == [0, 10_000]
    timer.user_spoke()
    timer.answered(plays_until=30)
    assert [s.ms for s in feed(timer, 30_000, 36_000)] == [5000]


def test_speech_or_an_unfinished_answer_stops_the_count() -> None:
    timer = IdleTimer(max_nudges=2)
    timer.answered(plays_until=0)
    feed(timer, 0, 4000)
    timer.user_spoke()
    assert feed(timer, 4000, 20_000) == []
    timer.answered(plays_until=20)
    timer.stop()  # the next answer was interrupted
    assert feed(timer, 20_000, 40_000) == []


def test_audio_that_arrives_in_one_late_piece_counts_from_where_playback_ended() -> None:
    """A client that sends seconds at a time: the stretch after playback's end counts, not
    the part of the piece heard while the answer still played."""
    timer = IdleTimer(max_nudges=1)
    timer.answered(plays_until=10.0)
    # 0-12 s of the stream arrives at once when 12 s have passed: 2 s of it after playback
    assert timer.heard(0, 12_000 * MS, arrived_at=12.0, timeout_ms=5000) is None
    silence = timer.heard(12_000 * MS, 15_000 * MS, arrived_at=15.0, timeout_ms=5000)
    assert silence == Silence(10_000 * MS, 15_000 * MS)
