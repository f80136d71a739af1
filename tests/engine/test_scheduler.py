"""Scheduler: budgets, chunked prefill, waiting instead of failing, preemption, ordering."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from engine import scheduler as scheduler_module
from engine.block_manager import BlockManager
from engine.config import EngineConfig
from engine.request_times import RequestTimes
from engine.sampling_params import SamplingParams
from engine.scheduler import Scheduler
from engine.sequence import Sequence, SequenceStatus


def make(num_blocks: int = 64, block_size: int = 4, **cfg: int) -> Scheduler:
    config = EngineConfig(model="unused", block_size=block_size, **cfg)  # type: ignore[arg-type]
    return Scheduler(config, BlockManager(num_blocks, block_size), max_model_len=1000)


_starts = itertools.count(1)


def request(n: int, max_tokens: int = 4, priority: int = 0, t: float = 0.0) -> Sequence:
    """A request with a prompt of n tokens that shares no block with any other request."""
    start = next(_starts) * 1000
    tokens = list(range(start, start + n))
    return Sequence(tokens, SamplingParams(max_tokens=max_tokens), None, priority, t)


def run_step(s: Scheduler, token: int = 7) -> list[Sequence]:
    batch = s.schedule()
    sampled = [
        token if seq.num_computed_tokens + n == seq.num_tokens else None
        for seq, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
    ]
    s.postprocess(batch, sampled)
    return batch.seqs


def test_chunked_prefill_respects_token_budget() -> None:
    s = make(max_num_batched_tokens=8, max_num_seqs=2)
    a = request(20)
    s.add(a)
    chunks = []
    while a.num_completion_tokens == 0:
        batch = s.schedule()
        chunks.append(batch.num_new_tokens[0])
        s.postprocess(batch, [7 if a.num_computed_tokens + chunks[-1] == 20 else None])
    assert chunks == [8, 8, 4]


def test_decodes_and_prefills_mix_in_one_step() -> None:
    s = make(max_num_batched_tokens=16, max_num_seqs=4)
    a = request(5)
    s.add(a)
    run_step(s)  # a prefilled, has its first token
    b = request(30)
    s.add(b)
    batch = s.schedule()
    assert batch.seqs == [a, b]
    assert batch.num_new_tokens == [1, 15]


def test_request_that_does_not_fit_waits() -> None:
    s = make(num_blocks=4, block_size=4, max_num_batched_tokens=64, max_num_seqs=4)
    a, b = request(12, max_tokens=2), request(12, max_tokens=2)
    s.add(a)
    s.add(b)
    assert s.schedule().seqs == [a]  # b needs 3 more blocks: only 1 free
    assert b.status == SequenceStatus.WAITING
    b_started = False
    while not a.is_finished:
        b_started |= b in run_step(s)
    assert not b_started
    assert run_step(s) == [b]


def test_preemption_by_recompute_under_kv_pressure() -> None:
    s = make(num_blocks=4, block_size=4, max_num_batched_tokens=64, max_num_seqs=4)
    a, b = request(7, max_tokens=10, t=0.0), request(7, max_tokens=10, t=1.0)
    s.add(a)
    s.add(b)
    for _ in range(3):
        run_step(s)
    # Both grew to 9-10 tokens: 3 blocks each do not fit in 4; b (later) was preempted.
    assert s.num_preemptions >= 1
    assert b.status == SequenceStatus.WAITING and b.block_table == []
    while s.has_unfinished():
        run_step(s)
    assert a.num_completion_tokens == 10 and b.num_completion_tokens == 10
    assert s.block_manager.num_free_blocks == 4


def test_a_requests_times_split_at_its_first_step_and_its_first_and_last_token(
    monkeypatch: Any,
) -> None:
    now = [100.0]
    monkeypatch.setattr(scheduler_module, "monotonic", lambda: now[0])
    s = make(num_blocks=4, block_size=4, max_num_batched_tokens=64, max_num_seqs=4)
    a, b = request(12, max_tokens=2, t=99.0), request(12, max_tokens=2, t=99.5)
    s.add(a)
    s.add(b)
    assert run_step(s) == [a]  # prefilled at 100; b needs 3 more blocks: only 1 free
    assert a.times() == RequestTimes(queue_s=1.0, prefill_s=0.0, decode_s=0.0)
    assert b.times() is None  # not scheduled yet
    now[0] = 100.25
    run_step(s)  # a's second and last token
    assert a.is_finished
    assert a.times() == RequestTimes(queue_s=1.0, prefill_s=0.0, decode_s=0.25)
    now[0] = 103.0
    assert run_step(s) == [b]
    assert b.times() == RequestTimes(queue_s=3.5, prefill_s=0.0, decode_s=0.0)


def test_a_long_prompts_prefill_spans_its_chunks(monkeypatch: Any) -> None:
    now = [10.0]
    monkeypatch.setattr(scheduler_module, "monotonic", lambda: now[0])
    s = make(max_num_batched_tokens=8, max_num_seqs=2)
    a = request(20, max_tokens=1, t=10.0)
    s.add(a)
    for t in (10.0, 10.5, 11.25):  # chunks of 8, 8 and 4, the last sampling the token
        now[0] = t
        run_step(s)
    assert a.times() == RequestTimes(queue_s=0.0, prefill_s=1.25, decode_s=0.0)
    assert a.times().inference_s == 1.25  # type: ignore[union-attr]


def test_a_preempted_request_keeps_its_queue_time_and_first_token(monkeypatch: Any) -> None:
    now = [10.0]
    monkeypatch.setattr(scheduler_module, "monotonic", lambda: now[0])
    s = make(num_blocks=4, block_size=4, max_num_batched_tokens=64, max_num_seqs=4)
    a, b = request(7, max_tokens=10, t=8.0), request(7, max_tokens=10, t=9.0)
    s.add(a)
    s.add(b)
    run_step(s)  # both prefilled: their first tokens at 10
    while s.has_unfinished():
        now[0] += 1.0  # b is preempted and comes back later
        run_step(s)
    assert b.num_preemptions >= 1
    times_a, times_b = a.times(), b.times()
    assert times_a is not None and times_b is not None
    assert (times_a.queue_s, times_a.prefill_s) == (2.0, 0.0)
    assert (times_b.queue_s, times_b.prefill_s) == (1.0, 0.0)
    assert times_b.decode_s > times_a.decode_s  # b's recompute delayed its last token


def test_waiting_order_priority_then_arrival() -> None:
    # Within the aging window (priority_aging_s: 4 s per level by default) the lower
    # priority goes first; otherwise arrival order.
    s = make(max_num_batched_tokens=64, max_num_seqs=1)
    late_urgent = request(3, priority=-1, t=1.4)
    early = request(3, t=1.0)
    earlier = request(3, t=0.5)
    for r in (early, late_urgent, earlier):
        s.add(r)
    assert s.waiting == [late_urgent, earlier, early]
    assert s.schedule().seqs == [late_urgent]


def test_max_num_seqs_caps_running() -> None:
    s = make(max_num_batched_tokens=64, max_num_seqs=2)
    reqs = [request(3) for _ in range(3)]
    for r in reqs:
        s.add(r)
    assert s.schedule().seqs == reqs[:2]


def test_finish_frees_blocks_and_counts_tokens() -> None:
    s = make(max_num_batched_tokens=64, max_num_seqs=4)
    a = request(6, max_tokens=3)
    s.add(a)
    while s.has_unfinished():
        run_step(s)
    assert a.finish_reason == "length" and a.completion_token_ids == [7, 7, 7]
    assert s.generation_tokens == 3
    assert s.block_manager.num_free_blocks == 64


def test_eos_and_stop_token_ids() -> None:
    s = make(max_num_batched_tokens=64, max_num_seqs=4)
    s.eos_token_ids = {7}
    a = request(4, max_tokens=5)
    b = Sequence([1, 2], SamplingParams(max_tokens=5, ignore_eos=True, stop_token_ids=[9]))
    s.add(a)
    s.add(b)
    run_step(s, token=7)
    assert a.finish_reason == "stop" and not b.is_finished
    run_step(s, token=9)
    assert b.finish_reason == "stop" and b.completion_token_ids == [7, 9]


def test_shared_first_block_is_computed_once() -> None:
    s = make(block_size=4, max_num_batched_tokens=64, max_num_seqs=4)
    system = [7, 7, 7, 7, 8, 8, 8, 8]
    a = Sequence([*system, 1, 2], SamplingParams(max_tokens=2))
    b = Sequence([*system, 3], SamplingParams(max_tokens=2))
    s.add(a)
    s.add(b)
    assert run_step(s) == [a]  # b waits: its first blocks are being computed by a
    batch = s.schedule()
    assert batch.seqs == [a, b]
    assert b.num_computed_tokens == 8 and batch.num_new_tokens == [1, 1]


def test_an_ended_sequence_keeps_its_reason_unless_its_text_fails() -> None:
    s = make(max_num_batched_tokens=64, max_num_seqs=4)
    a = request(4, max_tokens=1)
    s.add(a)
    run_step(s)
    assert a.finish_reason == "length"
    s.finish(a, "stop")  # a stop string found in the text of the token that ended it
    assert a.finish_reason == "length"
    s.finish(a, "error")  # detokenizing that token failed: its text is short
    assert a.finish_reason == "error" and s.block_manager.num_free_blocks == 64


def test_reset_stats_and_a_new_policy_keep_what_outlives_the_counters() -> None:
    s = make(max_num_batched_tokens=64, max_num_seqs=4)
    s.eos_token_ids = {9}
    a = request(6, max_tokens=3)
    s.add(a)
    while s.has_unfinished():
        run_step(s)
    assert s.generation_tokens == 3 and s.prefill_tokens == 6
    s.set_latency_sensitive(True)
    fcfs = s.reconfigured(dataclasses.replace(s.config, scheduling_policy="fcfs"))
    assert fcfs.policy.name == "fcfs" and fcfs.block_manager is s.block_manager
    assert fcfs.cost_model is s.cost_model and fcfs.latency_sensitive
    assert fcfs.eos_token_ids == {9} and fcfs.generation_tokens == 0
    s.reset_stats()
    assert (s.generation_tokens, s.prefill_tokens, s.num_preemptions) == (0, 0, 0)
