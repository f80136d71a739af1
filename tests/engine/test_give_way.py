"""GiveWay: a hold pauses the engine's steps while it serves at most one request, for
MAX_HOLD_S at most; closing it wakes the loop."""

from __future__ import annotations

import pytest

from engine.give_way import MAX_HOLD_S, GiveWay


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_hold_pauses_one_request_for_its_time_at_most_and_wakes_the_loop() -> None:
    clock, wakes = Clock(), []
    way = GiveWay(lambda: wakes.append(1), clock)
    assert way.wait_s(1, 0) == 0.0  # nothing holds it
    with way.hold():
        assert way.wait_s(1, 0) == MAX_HOLD_S
        assert way.wait_s(0, 0) == MAX_HOLD_S  # an idle engine's loop waits with it
        assert way.wait_s(0, 1) == 0.0  # a new request's prefill is never paused
        assert way.wait_s(2, 0) == 0.0  # a second request: the engine never pauses for one
        clock.now += MAX_HOLD_S * 0.75
        assert way.wait_s(1, 0) == pytest.approx(MAX_HOLD_S * 0.25)
        with way.hold():  # a second hold, opened later, holds on after the first's time
            clock.now += MAX_HOLD_S * 0.5
            assert way.wait_s(1, 0) == pytest.approx(MAX_HOLD_S * 0.5)
        assert wakes == [1]
        clock.now += MAX_HOLD_S
        assert way.wait_s(1, 0) == 0.0  # the first hold's time is up, though its work runs on
    assert wakes == [1, 1] and way.holds == 2 and way.wait_s(1, 0) == 0.0


def test_a_hold_whose_work_raises_is_closed() -> None:
    way = GiveWay(lambda: None)
    try:
        with way.hold():
            raise RuntimeError("synthesis failed")
    except RuntimeError:
        pass
    assert way.wait_s(1, 0) == 0.0
