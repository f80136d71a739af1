"""The serve drivers against real servers: the locustfile run headless and our asyncio
client against `r1voice serve` (SmolLM2, the cheap bundled model) give a record per
request, per class, with the asked-for tokens; the engine driver runs the table's modes;
a server that does not start fails every request of its row, by name."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import pytest

from bench.serve import endpoints, engine_driver, http_driver, workload
from bench.serve.servers import Server

MODEL = "smollm2-135m-instruct"
N, RATE, SEED = 8, 4.0, 5


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("r1voice", MODEL, threads=2) as running:
        running.start()
        yield running


def _check(records: list[dict[str, Any]]) -> int:
    """Every request answered with its asked-for tokens; returns how many were checked."""
    expected = workload.make(N, RATE, SEED, quick=True)
    assert [(r["index"], r["kind"]) for r in records] == [(q.index, q.kind) for q in expected]
    assert {r["kind"] for r in records} == set(workload.KINDS)  # the seed draws each class
    for record, request in zip(records, expected, strict=True):
        assert record["outcome"] == "answered", record
        assert record["tokens"] == request.max_tokens  # ignore_eos honoured
        assert 0 < record["ttft"] <= record["e2e"]
        assert record["tpot"] > 0
        assert "lag" in record  # how late the client sent it, for the table
    return len(records)


def test_the_locustfile_headless_records_every_request_per_class(server: Server) -> None:
    records = endpoints.locust_records(server.base_url, "r1voice", RATE, N, SEED, quick=True)
    assert _check(records) == N


def test_the_asyncio_driver_records_the_same_requests(server: Server) -> None:
    records = http_driver.run(server.base_url, "r1voice", workload.make(N, RATE, SEED))
    assert _check(records) == N


def test_a_server_that_does_not_start_fails_its_row_by_name() -> None:
    args = argparse.Namespace(model=MODEL, num_threads=2, seed=0, driver="http", url=None)
    records, info = endpoints.run_target("nope", args, [1.0], 4, quick=True)
    assert "unknown server 'nope'" in info["failed_to_start"]
    assert [r["outcome"] for r in records["1.0"]] == ["failed"] * 4
    assert {r["why"] for r in records["1.0"]} == {"server did not start"}


def test_the_engine_driver_runs_each_mode_on_the_same_arrivals() -> None:
    from engine import AsyncLLM

    llm = AsyncLLM(MODEL, max_num_seqs=4, max_num_batched_tokens=256)
    try:
        wl = workload.make(4, 8.0, seed=2)
        ids = engine_driver.prompts(llm, wl)
        assert all(len(p) > 10 for p in ids)
        for mode in ("static", "reorder", "priority"):
            records, engine = engine_driver.run_mode(llm, mode, wl, ids)
            assert [r["outcome"] for r in records] == ["answered"] * len(wl), mode
            assert [r["tokens"] for r in records] == [q.max_tokens for q in wl]
            assert set(engine) >= {"preemptions", "busy_share", "idle_waiting_share"}
    finally:
        llm.close()
