"""Scheduling policies: short-first priority with aging, static batches, the reserve,
backpressure (EngineBusyError) and predictive preemption."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from engine import AsyncLLM, EngineBusyError, SamplingParams
from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.llm_engine import LLMEngine
from engine.scheduler import Scheduler
from engine.scheduling.backpressure import queue_delay_error
from engine.sequence import Sequence, SequenceStatus

_starts = itertools.count(1)


def make(policy: str = "priority", num_blocks: int = 256, block_size: int = 4, **cfg):  # type: ignore[no-untyped-def]
    config = EngineConfig(model="unused", block_size=block_size, scheduling_policy=policy, **cfg)
    return Scheduler(config, BlockManager(num_blocks, block_size), max_model_len=10_000)


def request(n: int, priority: int | None = None, t: float = 0.0, max_tokens: int = 2) -> Sequence:
    start = next(_starts) * 10_000
    return Sequence(
        list(range(start, start + n)), SamplingParams(max_tokens=max_tokens), None, priority, t
    )


def run_step(s: Scheduler) -> list[Sequence]:
    batch = s.schedule()
    sampled = [
        7 if seq.num_computed_tokens + n == seq.num_tokens else None
        for seq, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
    ]
    s.postprocess(batch, sampled)
    return batch.seqs


def admission_order(s: Scheduler) -> list[Sequence]:
    """Run the scheduler (paused engine: everything queued first) to the end."""
    order: list[Sequence] = []
    while s.has_unfinished():
        for seq in run_step(s):
            if seq not in order:
                order.append(seq)
    return order


def test_default_priority_is_short_first_and_explicit_overrides() -> None:
    s = make(max_num_seqs=1, max_num_batched_tokens=4096)
    long, medium, short = request(300), request(130), request(50)
    voice_long = request(600, priority=-1)
    assert (long.priority, medium.priority, short.priority) == (2, 1, 0)
    for seq in (long, medium, short, voice_long):
        s.add(seq)
    assert admission_order(s) == [voice_long, short, medium, long]


def test_fcfs_ignores_length() -> None:
    s = make("fcfs", max_num_seqs=1, max_num_batched_tokens=4096)
    reqs = [request(300, t=0.0), request(50, t=1.0), request(130, t=2.0)]
    for seq in reversed(reqs):
        s.add(seq)
    assert admission_order(s) == reqs


def test_aging_admits_an_old_low_priority_request() -> None:
    # A 640-token prompt (priority 5) at t=0, then a short request every second: with
    # one level per second of aging, shorts arriving after t=5 queue behind it.
    s = make(max_num_seqs=1, max_num_batched_tokens=4096, priority_aging_s=1.0)
    old = request(640, t=0.0)
    shorts = [request(20, t=float(i)) for i in range(1, 10)]
    for seq in [old, *shorts]:
        s.add(seq)
    order = admission_order(s)
    assert order.index(old) == 4  # after the shorts of t=1..4, before t=5 (a tie: FCFS)
    assert all(order.index(x) > order.index(old) for x in shorts[4:])


def test_static_waits_for_a_full_batch_then_runs_it_to_the_end() -> None:
    s = make("static", max_num_seqs=2, max_num_batched_tokens=256, static_batch_timeout_s=1e6)
    a, b, c = request(8, max_tokens=3), request(8, max_tokens=3), request(8, max_tokens=3)
    s.add(a)
    assert run_step(s) == []  # one request: the batch is not full, the timeout far
    s.add(b)
    assert run_step(s) == [a, b]
    s.add(c)
    while not (a.is_finished and b.is_finished):
        assert c not in run_step(s)  # nothing joins a running static batch
    assert c.status == SequenceStatus.WAITING


def test_low_priority_prefill_leaves_the_token_reserve() -> None:
    s = make(max_num_seqs=4, max_num_batched_tokens=100, preemption_reserve=0.2)
    long = request(300)  # priority 2: outside the reserve
    s.add(long)
    assert s.schedule().num_new_tokens == [80]
    short = request(30)
    s.add(short)
    # While a high-priority prompt is prefilled, the rest gets only the reserve's
    # share: the step stays short.
    batch = s.schedule()
    assert batch.seqs == [long, short] and batch.num_new_tokens == [20, 30]


def test_low_priority_admission_leaves_the_kv_reserve() -> None:
    s = make(num_blocks=20, block_size=4, max_num_seqs=4, max_num_batched_tokens=512)
    assert s.reserve_blocks == 4
    low_b = request(38, priority=3)  # 10 blocks
    s.add(low_b)
    run_step(s)
    low_c = request(32, priority=3)  # 8 blocks: would leave 2 free, under the reserve
    s.add(low_c)
    assert s.schedule().seqs == [low_b]
    assert low_c.status == SequenceStatus.WAITING
    high = request(32, priority=0, t=1.0)  # same size, high priority: uses the reserve
    s.add(high)
    assert s.schedule().seqs == [low_b, high]
    assert s.block_manager.num_free_blocks == 2 and low_c.status == SequenceStatus.WAITING


def test_high_priority_arrival_preempts_the_lowest_priority_running() -> None:
    s = make(num_blocks=20, block_size=4, max_num_seqs=4, max_num_batched_tokens=512)
    low = request(60, priority=5, max_tokens=50)  # 15 blocks: fits above the reserve (4)
    s.add(low)
    run_step(s)
    assert low.status == SequenceStatus.RUNNING
    urgent = request(24, priority=-1, t=0.5)  # 6 blocks; only 5 free
    s.add(urgent)
    batch = s.schedule()
    assert urgent in batch.seqs and low not in batch.seqs
    assert batch.num_preempted == 1 and s.num_preemptions == 1
    assert low.status == SequenceStatus.WAITING and low.num_preemptions == 1


# ---- the engine: backpressure and preemption with a real (tiny) model ---------------


@pytest.fixture(scope="module")
def paused(tiny_llama: Path) -> LLMEngine:
    return LLMEngine(
        str(tiny_llama), block_size=4, num_kv_blocks=24, max_num_seqs=4, max_waiting_tokens=45
    )


def test_backpressure_refuses_at_once_and_leaves_no_trace(paused: LLMEngine) -> None:
    engine = paused
    p = SamplingParams(max_tokens=3, temperature=0.0, ignore_eos=True)
    engine.add_request([5] * 20, p, "a")
    engine.add_request([6] * 20, p, "b")
    before = engine.stats()
    with pytest.raises(EngineBusyError) as info:
        engine.add_request([7] * 20, p, "c")
    assert info.value.retry_after_s > 0
    after = engine.stats()
    assert "c" not in engine.requests and after.num_waiting == before.num_waiting == 2
    assert after.waiting_tokens == 40 and after.num_refused == before.num_refused + 1
    engine.add_request([8] * 5, p, "d")  # fits the 45-token budget exactly
    while engine.has_unfinished():
        engine.step()
    engine.add_request([7] * 20, p, "c")  # drained: accepted again
    while engine.has_unfinished():
        engine.step()
    stats = engine.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total and stats.waiting_tokens == 0


def test_a_queue_that_has_waited_too_long_refuses_new_requests(tiny_llama: Path) -> None:
    """Overload refusal by measured queueing delay: while the oldest waiting request has
    waited longer than max_queue_delay_s, new ones are refused at once (a queue that only
    grows otherwise took time to first token from 0.07 s to 5.5 s with no refusal)."""
    engine = LLMEngine(
        str(tiny_llama), block_size=4, num_kv_blocks=24, max_num_seqs=1, max_queue_delay_s=2.0
    )
    p = SamplingParams(max_tokens=3, temperature=0.0, ignore_eos=True)
    engine.add_request([5] * 8, p, "running")
    engine.step()  # "running" takes the only slot
    waiting = engine.add_request([6] * 8, p, "waiting")
    engine.add_request([7] * 8, p, "young queue")  # the queue has not waited long: accepted
    waiting.arrival_time -= 10.0  # as if it had waited 10 s
    with pytest.raises(EngineBusyError, match="waited 10") as info:
        engine.add_request([8] * 8, p, "refused")
    assert 9.9 <= info.value.retry_after_s <= 11
    assert "refused" not in engine.requests and engine.stats().num_refused == 1
    while engine.has_unfinished():
        engine.step()
    engine.add_request([8] * 8, p, "later")  # the queue drained: accepted again
    assert "later" in engine.requests
    assert queue_delay_error(None, 2.0, 100.0) is None
    assert queue_delay_error(90.0, 0.0, 100.0) is None  # off
    assert queue_delay_error(99.0, 2.0, 100.0) is None


def test_async_stream_raises_engine_busy_before_queueing(tiny_llama: Path) -> None:
    # A static batch that never starts (timeout far away): requests stay waiting.
    allm = AsyncLLM(
        str(tiny_llama),
        block_size=4,
        num_kv_blocks=24,
        max_num_seqs=4,
        scheduling_policy="static",
        static_batch_timeout_s=1e6,
        max_waiting_requests=2,
    )
    p = SamplingParams(max_tokens=2, temperature=0.0, ignore_eos=True)

    async def main() -> None:
        streams = [allm.stream([3 + i] * 8, p, request_id=f"w{i}") for i in range(2)]
        tasks = [asyncio.ensure_future(anext(s)) for s in streams]
        while allm.stats().num_waiting < 2:
            await asyncio.sleep(0.01)
        with pytest.raises(EngineBusyError):
            await anext(allm.stream([9] * 8, p, request_id="refused"))
        assert allm.stats().num_waiting == 2
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # cancelled: aborted
        for s in streams:
            await s.aclose()

    try:
        asyncio.run(main())
        stats = allm.stats()
        assert stats.num_waiting == 0 and stats.kv_blocks_free == stats.kv_blocks_total
    finally:
        allm.close()


def test_preempted_request_resumes_token_identical(tiny_llama: Path) -> None:
    exact = {"quantization": "none"} if "quantization" in EngineConfig.__dataclass_fields__ else {}
    engine = LLMEngine(str(tiny_llama), block_size=4, num_kv_blocks=24, max_num_seqs=4, **exact)
    greedy = SamplingParams(max_tokens=28, temperature=0.0, ignore_eos=True)
    long_prompt = [(i * 7) % 200 + 2 for i in range(60)]
    expected = engine.generate([long_prompt], greedy)[0].token_ids
    engine.free_all()

    low = engine.add_request(long_prompt, greedy, "low", priority=5)
    for _ in range(6):
        engine.step()
    assert low.status == SequenceStatus.RUNNING and low.num_completion_tokens > 0
    urgent = engine.add_request([3] * 36, SamplingParams(max_tokens=4), "urgent", priority=-1)
    engine.step()  # the very next step: the urgent one runs, the low one is preempted
    assert urgent.num_computed_tokens > 0 or urgent.num_completion_tokens > 0
    assert low.status == SequenceStatus.WAITING and engine.stats().num_preemptions == 1
    while engine.has_unfinished():
        engine.step()
    assert low.completion_token_ids == expected
    stats = engine.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total


def test_a_blocked_low_priority_head_does_not_block_the_reserve() -> None:
    # Long requests waited long enough to sort first, but work outside the reserve is
    # full: the short request behind them still starts, in the reserve.
    s = make(max_num_seqs=8, max_num_batched_tokens=100, priority_aging_s=1.0)
    running_long = request(300, t=0.0)
    s.add(running_long)
    run_step(s)  # takes its 80 tokens per step
    old_long = request(300, t=0.0)
    short = request(20, t=100.0)  # sorts after old_long (aging), but is high priority
    s.add(old_long)
    s.add(short)
    batch = s.schedule()
    assert batch.seqs == [running_long, short] and batch.num_new_tokens == [20, 20]
    assert old_long.status == SequenceStatus.WAITING
