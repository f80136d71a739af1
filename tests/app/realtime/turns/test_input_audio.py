"""How far ahead of real time a client sends its audio."""

from __future__ import annotations

from app.realtime.turns.input_audio import REAL_TIME_S, SendPace


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_microphone_stays_real_time_even_after_the_server_was_busy() -> None:
    """Bug: the bucket stopped at zero, so the rush of appends read after the server
    judged a pause (0.5 s of audio waiting unread) stayed in it for good, and from then
    on every pause of that microphone was judged as if a file were being streamed."""
    clock = FakeClock()
    pace = SendPace(clock)
    for _round in range(5):
        for _ in range(50):  # a second of 20 ms appends, read as they come
            clock.now += 0.02
            pace.received(0.02)
        clock.now += 0.6  # the server was busy for 600 ms...
        for _ in range(30):  # ...then reads what waited, at once
            pace.received(0.02)
        assert pace.ahead_s <= REAL_TIME_S


def test_a_file_streamed_at_once_runs_ahead() -> None:
    clock = FakeClock()
    pace = SendPace(clock)
    clock.now = 100.0  # long after the session began, with nothing sent
    for _ in range(100):  # 2 s of audio in 50 ms
        clock.now += 0.0005
        pace.received(0.02)
    assert pace.ahead_s > REAL_TIME_S


def test_a_microphone_stamped_on_arrival_stays_real_time_after_a_long_stall() -> None:
    """Bug: after a stall over 1.5 s (a pause judged while the early words were slow)
    the rush of appends filled the bucket past its floor, and the microphone counted as
    a file being streamed for the rest of the session (`bench voice`: every pause after
    JFK's was judged without the words). Appends now carry when they arrived."""
    clock = FakeClock()
    stalled, stamped = SendPace(clock), SendPace(clock)
    arrivals = [0.02 * i for i in range(1, 301)]  # 6 s of a microphone's appends
    for i, arrived in enumerate(arrivals):
        clock.now = arrived if not 100 <= i < 200 else 4.0  # 2 s of them handled late
        stalled.received(0.02)
        stamped.received(0.02, at=arrived)
    assert stalled.ahead_s > REAL_TIME_S  # what the handling time alone says
    assert stamped.ahead_s <= REAL_TIME_S
