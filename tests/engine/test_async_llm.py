"""AsyncLLM: streaming, abort (explicit, by leaving the loop, under random load)."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import (
    AsyncLLM,
    ConfigError,
    EngineError,
    InvalidRequestError,
    ModelNotFoundError,
    SamplingParams,
)

LONG = SamplingParams(max_tokens=200, temperature=0.0, ignore_eos=True)


@pytest.fixture(scope="module")
def allm(tiny_llama: Path) -> Iterator[AsyncLLM]:
    engine = AsyncLLM(str(tiny_llama), block_size=4, num_kv_blocks=40, max_num_seqs=8)
    yield engine
    engine.close()


def assert_pool_full(allm: AsyncLLM) -> None:
    stats = allm.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total
    assert stats.num_running == stats.num_waiting == 0


def test_stream_matches_generate(allm: AsyncLLM) -> None:
    params = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)
    expected = allm.engine.generate([[5, 6, 7, 8]], params)[0].token_ids

    async def main() -> list[int]:
        tokens: list[int] = []
        called, first = time.monotonic(), None
        async for delta in allm.stream([5, 6, 7, 8], params, request_id="s1"):
            first = first or time.monotonic()
            tokens.extend(delta.token_ids)
            last = delta
        assert last.finished and last.finish_reason == "length"
        # the last delta says where the time went: from the engine's queue to the first
        # step, to the first token (before it was handed back), to the last
        times, ended = last.times, time.monotonic()
        assert times is not None and first is not None
        assert times.queue_s >= 0 and times.prefill_s >= 0 and times.decode_s > 0
        assert times.queue_s + times.prefill_s <= first - called
        assert times.queue_s + times.inference_s <= ended - called
        return tokens

    assert asyncio.run(main()) == expected
    assert_pool_full(allm)


def test_abort_mid_stream_frees_blocks_at_once(allm: AsyncLLM) -> None:
    async def main() -> None:
        seen = 0
        async for delta in allm.stream([3] * 30, LONG, request_id="victim"):
            seen += 1
            if seen == 3:
                assert allm.stats().kv_blocks_used > 0
                await allm.abort("victim")
                assert allm.stats().kv_blocks_used == 0  # freed when abort() returns
            if delta.finished:
                assert delta.finish_reason == "abort"
        assert seen >= 3

    asyncio.run(main())
    assert_pool_full(allm)


def test_leaving_the_loop_aborts(allm: AsyncLLM) -> None:
    async def main() -> None:
        gen = allm.stream([4] * 10, LONG)
        async for _ in gen:
            break
        await gen.aclose()  # what the event loop does to an abandoned generator
        assert_pool_full(allm)  # the blocks were freed before aclose() returned

    asyncio.run(main())
    assert_pool_full(allm)


def test_a_caller_whose_event_loop_closed_is_aborted_and_the_stats_say_so(
    allm: AsyncLLM,
) -> None:
    """The engine aborts a stream nobody can hear (its event loop closed with the stream
    open); the published statistics must show the freed blocks, not the step before the
    abort (a stale num_running=1 failed a later test's leak check in CI)."""
    loop = asyncio.new_event_loop()
    gen = allm.stream([4] * 10, LONG, request_id="orphan")
    loop.run_until_complete(gen.__anext__())
    loop.close()  # no aclose(): the engine learns of it on its next delivery
    deadline = time.monotonic() + 30
    while "orphan" in allm.engine.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "orphan" not in allm.engine.requests
    assert_pool_full(allm)  # the engine is idle now: no later step would republish
    del gen


def test_cancelled_consumer_aborts(allm: AsyncLLM) -> None:
    async def consume() -> None:
        async for _ in allm.stream([4] * 10, LONG):
            pass

    async def main() -> None:
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert_pool_full(allm)

    asyncio.run(main())
    assert_pool_full(allm)


def test_bad_request_does_not_stop_the_loop(allm: AsyncLLM) -> None:
    async def main() -> None:
        good = asyncio.create_task(allm.generate([9, 9, 9], SamplingParams(max_tokens=5)))
        with pytest.raises(InvalidRequestError):
            async for _ in allm.stream([1] * 10_000, LONG):
                pass
        out = await good
        assert len(out.token_ids) <= 5 and out.finish_reason in ("length", "stop")

    asyncio.run(main())
    assert_pool_full(allm)


def test_200_random_submit_abort_finish_leave_pool_full(allm: AsyncLLM) -> None:
    rng = random.Random(0)

    async def one(i: int) -> None:
        await asyncio.sleep(rng.random() * 0.5)
        prompt = [rng.randrange(2, 256) for _ in range(rng.randint(1, 40))]
        params = SamplingParams(
            max_tokens=rng.randint(1, 20), temperature=rng.choice([0.0, 1.0]), ignore_eos=True
        )
        mode = rng.choice(["finish", "abort", "leave"])
        after = rng.randint(0, 5)
        n = 0
        async for delta in allm.stream(prompt, params, request_id=f"r{i}", priority=i % 3):
            n += 1
            if mode == "abort" and n > after:
                await allm.abort(f"r{i}")
            elif mode == "leave" and n > after:
                break
            if delta.finished and mode == "finish":
                assert delta.finish_reason == "length"

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(200)))
        for _ in range(300):
            if allm.stats().num_running + allm.stats().num_waiting == 0:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert_pool_full(allm)


def test_shutdown_stops_thread(tiny_llama: Path) -> None:
    engine = AsyncLLM(str(tiny_llama))

    async def main() -> None:
        out = await engine.generate([1, 2, 3], SamplingParams(max_tokens=3))
        assert len(out.token_ids) <= 3
        await engine.shutdown()

    asyncio.run(main())
    assert not engine._thread.is_alive()


def test_failed_step_fails_its_requests_only(
    allm: AsyncLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = allm.engine.model_runner.run
    calls = {"n": 0}

    def flaky(batch):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated kernel failure")
        return real_run(batch)

    monkeypatch.setattr(allm.engine.model_runner, "run", flaky)

    async def main() -> None:
        with pytest.raises(EngineError):
            async for _ in allm.stream([1, 2, 3], LONG):
                pass
        out = await allm.generate([4, 5, 6], SamplingParams(max_tokens=4, ignore_eos=True))
        assert len(out.token_ids) == 4

    asyncio.run(main())
    assert_pool_full(allm)


@pytest.mark.parametrize("when", ["during", "after"])
def test_cancelled_during_or_just_after_the_add_aborts(
    allm: AsyncLLM, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Issue 10 bug 2: a caller cancelled while its add runs (or right after it, before
    the stream's first await resumes) must not leave the request generating."""
    real_add = allm.engine.add_request
    entered, release = threading.Event(), threading.Event()

    def slow_add(*args: Any, **kwargs: Any) -> Any:
        if when == "during":
            entered.set()
            release.wait(5)
            return real_add(*args, **kwargs)
        seq = real_add(*args, **kwargs)
        entered.set()
        release.wait(5)
        return seq

    monkeypatch.setattr(allm.engine, "add_request", slow_add)

    async def consume() -> None:
        async for _ in allm.stream([4] * 10, LONG, request_id=f"cancel-{when}"):
            pass

    async def main() -> None:
        task = asyncio.create_task(consume())
        await asyncio.to_thread(entered.wait, 5)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert_pool_full(allm)  # aborted and freed before the cancelled task ended

    asyncio.run(main())
    assert_pool_full(allm)


def test_stats_never_run_engine_code_on_the_callers_thread(
    allm: AsyncLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 bug 7: stats() and the early backpressure check read a snapshot the
    engine thread publishes; engine state is touched by the engine thread only."""
    threads: list[str] = []
    for name in ("stats", "check_capacity"):
        real = getattr(allm.engine, name)

        def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(allm.engine, name, spy)

    async def main() -> None:
        gen = allm.generate([5, 6, 7], SamplingParams(max_tokens=30, ignore_eos=True))
        task = asyncio.create_task(gen)
        for _ in range(20):
            allm.stats()
            await asyncio.sleep(0.001)
        await task

    asyncio.run(main())
    assert threads and set(threads) == {allm._thread.name}
    stats = allm.stats()
    assert stats.generation_tokens > 0
    assert_pool_full(allm)


def test_max_model_len_is_public(allm: AsyncLLM) -> None:
    assert allm.max_model_len == allm.engine.max_model_len == 160  # 40 blocks of 4


def test_build_errors_reach_the_caller_and_the_engine_runs_on_its_own_thread(
    allm: AsyncLLM, tmp_path: Path
) -> None:
    with pytest.raises(ModelNotFoundError):
        AsyncLLM(str(tmp_path / "nope"))
    with pytest.raises(ConfigError):
        AsyncLLM("unused", block_size=0)
    assert allm._thread.is_alive() and allm.stats().kv_blocks_total == 40


class LoopKiller(BaseException):
    """Not an Exception: escapes the step's own error handling, as a fatal error would."""


def test_a_dead_engine_loop_fails_every_caller_instead_of_hanging(tiny_llama: Path) -> None:
    """Bug: if the engine thread died, every stream (and every later call) waited forever."""
    engine = AsyncLLM(str(tiny_llama), block_size=4, num_kv_blocks=40, max_num_seqs=8)
    started = threading.Event()

    def die() -> None:
        started.set()
        raise LoopKiller("simulated fatal error")

    engine.engine.step = die  # type: ignore[method-assign]
    params = SamplingParams(max_tokens=8, ignore_eos=True)

    async def main() -> tuple[str, str]:
        with pytest.raises(EngineError, match="failed inside the engine") as first:
            async for _ in engine.stream([1, 2, 3], params):
                pass
        with pytest.raises(EngineError, match="engine loop stopped") as later:
            await asyncio.wait_for(engine.generate([1, 2], params), 10)
        return str(first.value), str(later.value)

    asyncio.run(asyncio.wait_for(main(), 30))
    assert started.is_set()
    assert engine.failure is not None and "LoopKiller" in engine.failure


def test_give_way_pauses_a_lone_request_and_never_a_busy_engine(
    allm: AsyncLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a hold is open the engine takes no step for its one decoding request, and
    goes on when it closes; a new request still gets its prefill (its first token), and
    with two requests the engine never pauses."""
    monkeypatch.setattr("engine.give_way.MAX_HOLD_S", 60.0)
    grew = asyncio.Event()

    async def until(deltas: list[int], n: int) -> None:
        while len(deltas) < n:
            grew.clear()
            await grew.wait()

    async def consume(request_id: str, deltas: list[int]) -> None:
        async for delta in allm.stream([5, 6, 7, 8], LONG, request_id=request_id):
            deltas.append(len(delta.token_ids))
            grew.set()

    async def paused(since: int) -> None:
        for _ in range(6000):  # the loop reaches its wait within a step
            if allm.give_way.paused_steps > since:
                return
            await asyncio.sleep(0.005)
        raise AssertionError("the engine loop never waited for the hold")

    async def main() -> None:
        one: list[int] = []
        task = asyncio.create_task(consume("alone", one))
        await asyncio.wait_for(until(one, 3), 30)
        with allm.give_way.hold():
            await paused(allm.give_way.paused_steps)
            await asyncio.sleep(0.05)  # deltas the loop sent before it waited arrive
            held = len(one)
            await asyncio.sleep(0.3)  # the tiny model makes dozens of steps a second
            assert len(one) == held
        await asyncio.wait_for(until(one, len(one) + 3), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        two: tuple[list[int], list[int]] = ([], [])
        tasks = [asyncio.create_task(consume(f"busy{i}", d)) for i, d in enumerate(two)]
        await asyncio.wait_for(until(two[1], 1), 30)
        with allm.give_way.hold():
            start = [len(d) for d in two]
            for d, n in zip(two, start, strict=True):
                await asyncio.wait_for(until(d, n + 3), 30)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with allm.give_way.hold():  # an idle engine: a new request is not held back
            late: list[int] = []
            task = asyncio.create_task(consume("late", late))
            await asyncio.wait_for(until(late, 1), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    deadline = time.monotonic() + 10
    while allm.stats().num_running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert_pool_full(allm)
