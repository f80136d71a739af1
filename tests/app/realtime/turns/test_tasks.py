"""The turns' background work: counted while it runs, all of it stopped at close."""

from __future__ import annotations

import asyncio

from app.realtime.turns.tasks import Tasks


def test_a_task_counts_until_it_ends_and_stop_cancels_the_rest() -> None:
    async def main() -> tuple[list[bool], bool, bool]:
        tasks, gate = Tasks(), asyncio.Event()
        quick = tasks.spawn(asyncio.sleep(0), "quick")
        held = tasks.spawn(gate.wait(), "held")  # type: ignore[arg-type]
        running = [tasks.running]
        await asyncio.wait([quick])
        await asyncio.sleep(0)  # its done callback
        assert tasks.snapshot() == {held}
        await tasks.stop()
        running.append(tasks.running)
        return running, held.cancelled(), quick.cancelled()

    running, held_cancelled, quick_cancelled = asyncio.run(main())
    assert running == [True, False] and held_cancelled and not quick_cancelled
