"""The shared realtime test harness checks what it is told to: the exact typed events, in
order, after the part's background work has ended."""

from __future__ import annotations

import asyncio

import pytest

from app.protocol import server_events as se
from tests.app.realtime.harness import Harness


def deleted(item_id: str) -> se.ItemDeleted:
    return se.ItemDeleted(item_id=item_id)


def test_run_feeds_inputs_in_order_waits_for_background_work_and_returns_its_events() -> None:
    async def main() -> list[object]:
        running: set[asyncio.Task[None]] = set()
        h = Harness(lambda: {t for t in running if not t.done()})

        async def later() -> None:
            await asyncio.sleep(0.01)
            h.emit(deleted("item_2"))

        def start() -> None:
            running.add(asyncio.get_running_loop().create_task(later()))

        h.emit(deleted("item_0"))  # before the run: not part of what it checks
        out = await h.run(lambda: h.emit(deleted("item_1")), start, expect=[se.ItemDeleted] * 2)
        assert h.types == [se.ItemDeleted] * 3 and h.of_type(se.ItemDeleted) == h.events
        assert h.of_type(se.SpeechStarted) == []
        return [e["item_id"] for e in out]

    assert asyncio.run(main()) == ["item_1", "item_2"]


@pytest.mark.parametrize(
    "expect",
    [[], [se.ItemDeleted, se.ItemDeleted], [se.SpeechStarted], [se.ServerEvent]],
)
def test_run_fails_on_any_other_events(expect: list[type[se.ServerEvent]]) -> None:
    h = Harness()
    with pytest.raises(AssertionError):
        asyncio.run(h.run(lambda: h.emit(deleted("item_1")), expect=expect))
