from __future__ import annotations

import asyncio

import pytest

from app.server.heap_trimmer import HeapTrimmer


def test_closes_in_a_row_make_one_trim_and_trims_keep_their_interval() -> None:
    async def main() -> list[float]:
        trimmer = HeapTrimmer(interval_s=0.3, settle_s=0.05)
        if not trimmer.available:
            pytest.skip("this C library has no malloc_trim")
        for _ in range(5):  # five sessions closing together
            trimmer.session_closed()
        await trimmer.settled()
        assert len(trimmer.trimmed_at) == 1
        trimmer.session_closed()  # soon after: waits for the interval
        await trimmer.settled()
        await trimmer.close()
        return trimmer.trimmed_at

    first, second = asyncio.run(main())
    assert second - first >= 0.3
