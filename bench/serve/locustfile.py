"""Locust's Poisson load against any OpenAI-compatible server: the serve bench's mix
(bench/serve/workload.py), streamed, TTFT, time per output token and end-to-end per
request class.

One user is the arrival process: it sends each request of the fixed-seed workload at
its own exponential gap, each in a greenlet of its own (open loop: a slow server does
not slow the arrivals, as a closed loop of users waiting for answers would), and stops
the run once every request has its record. By hand, against any deployment:

    locust -f bench/serve/locustfile.py --headless -u 1 -r 1 --host http://127.0.0.1:8000 \\
        --rate 2 --requests 40 --model r1voice --records records.jsonl

Locust's table then has rows "TTFT", "TPOT" and "E2E" per class (short, long, chat);
`--records` writes one JSON line per request, answered, refused or failed (what
`r1voice bench serve --driver locust` reads). `--full` sends the full-size mix.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import gevent
from locust import HttpUser, constant, events, task
from locust.exception import StopUser
from requests.adapters import HTTPAdapter

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by hand from anywhere

from bench.serve.records import StreamTimer, failed, refused
from bench.serve.workload import Request, make


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--rate", type=float, default=1.0, help="requests/s (Poisson)")
    parser.add_argument("--requests", type=int, default=20, help="requests in the run")
    parser.add_argument("--seed", type=int, default=0, help="the workload's seed")
    parser.add_argument("--full", action="store_true", help="full-size prompts and answers")
    parser.add_argument("--model", default="r1voice", help="the model name the server serves")
    parser.add_argument("--records", default="", help="write one JSON line per request here")


class PoissonArrivals(HttpUser):
    """The arrival process: one user, one greenlet per request."""

    fixed_count = 1
    wait_time = constant(0)

    def on_start(self) -> None:
        # one connection per request in flight, as the asyncio driver does
        self.client.mount("http://", HTTPAdapter(pool_connections=1, pool_maxsize=4096))

    @task
    def arrivals(self) -> None:
        options = self.environment.parsed_options
        workload = make(options.requests, options.rate, options.seed, quick=not options.full)
        start = time.perf_counter()
        records: list[dict[str, Any]] = []
        greenlets = []
        for req in workload:
            gevent.sleep(max(0.0, start + req.t - time.perf_counter()))
            greenlets.append(gevent.spawn(self._one, req, start, options.model, records))
        gevent.joinall(greenlets)
        if options.records:
            lines = "".join(json.dumps(r) + "\n" for r in sorted(records, key=_index))
            Path(options.records).write_text(lines)
        runner = self.environment.runner
        if runner is not None:
            runner.quit()
        raise StopUser()

    def _one(self, req: Request, start: float, model: str, out: list[dict[str, Any]]) -> None:
        sent = time.perf_counter()
        timer = StreamTimer(sent)
        url = "/v1/chat/completions"
        record: dict[str, Any]
        try:
            with self.client.post(
                url, json=req.body(model), stream=True, name=req.kind, catch_response=True
            ) as response:
                if response.status_code in (429, 503):
                    response.failure(f"refused {response.status_code}")
                    record = refused(req.kind, req.index, response.status_code, sent - start)
                elif response.status_code != 200:
                    response.failure(f"HTTP {response.status_code}")
                    record = failed(
                        req.kind, req.index, f"HTTP {response.status_code}", sent - start
                    )
                else:
                    for line in response.iter_lines():
                        timer.line(line, time.perf_counter())
                    record = timer.record(req.kind, req.index, time.perf_counter(), start)
                    if record["outcome"] != "answered":
                        response.failure(record["why"])
        except Exception as exc:  # a reset or a timeout: a record all the same
            record = failed(req.kind, req.index, type(exc).__name__, sent - start)
        record["lag"] = round(record["sent"] - req.t, 4)  # the client behind its schedule
        out.append(record)
        if record["outcome"] == "answered":
            for name, key in (("TTFT", "ttft"), ("E2E", "e2e"), ("TPOT", "tpot")):
                if record[key] is not None:
                    self.environment.events.request.fire(
                        request_type=name,
                        name=req.kind,
                        response_time=record[key] * 1000,
                        response_length=record["tokens"],
                        exception=None,
                        context={},
                    )


def _index(record: dict[str, Any]) -> int:
    return int(record["index"])
