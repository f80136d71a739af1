"""Answers worth hearing: accuracy, time to first token and length of each bundled LLM's
answers to short spoken-assistant questions, in English and Chinese.

For each chosen model (default: every prepared bundled LLM) this starts a real server
(`python -m app.cli serve --llm-backend embedded --llm-model NAME`, on loopback) and asks
each question of bench/answers/questions.py (44 English, 20 Chinese: facts, arithmetic, units,
definitions, everyday how-to), one at a time, through `POST /v1/chat/completions` with
`stream: true`, greedy (temperature 0), at most `--max-tokens` tokens, and the
instructions the server gives a voice session (read from the `session.created` of a
Realtime WebSocket: the default system prompt unless R1VOICE_SYSTEM_PROMPT says
otherwise) as the system message. One untimed question warms each server first.

An answer is accepted when it contains one of the question's alternatives, matched
leniently (bench/answers/score.py). Reported per model and language: accuracy, time to
first token P50/P95 (request sent to the first content delta), answer length (words for
English, characters for Chinese: mean and P50) and the share answered in the question's
language; per question the answer and its verdict. Stdout gets a table (and the JSON too
unless `--json` names a file). Accuracy is reported, never asserted.

`--voice-delegation` speaks the English questions to a GPT-Live session whose fast model
delegates to a bigger one, against each model alone (bench/answers/voice_delegation.py).
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

from bench.answers import voice_delegation
from bench.answers.questions import QUESTIONS, QUICK, Question
from bench.kit.models import choose_models

LANGS = ("en", "zh")
WARMUP = "Hello, can you hear me?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", default=None, help="comma-separated (default: all prepared)")
    parser.add_argument("--max-tokens", type=int, default=64, help="per answer")
    parser.add_argument(
        "--per-language", type=int, default=None, help="ask only the first N of each language"
    )
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    voice_delegation.add_arguments(parser)


def choose_questions(quick: bool, per_language: int | None) -> list[Question]:
    pool = [q for q in QUESTIONS if q.id in QUICK] if quick else list(QUESTIONS)
    if per_language is None:
        return pool
    return [q for lang in LANGS for q in [p for p in pool if p.lang == lang][:per_language]]


def ask(client: Any, instructions: str, text: str, max_tokens: int) -> dict[str, Any]:
    """One streamed chat completion: its text, TTFT (s), finish reason and token count."""
    import json

    body = {
        "model": "r1voice",
        "messages": [
            {"role": "system", "content": instructions},
            {"role": "user", "content": text},
        ],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    out: dict[str, Any] = {"answer": "", "ttft_s": None, "finish_reason": None}
    out["completion_tokens"] = None
    start = time.perf_counter()
    with client.stream("POST", "/v1/chat/completions", json=body) as reply:
        if reply.status_code != 200:
            reply.read()
            out["error"] = f"HTTP {reply.status_code}: {reply.text[:200]}"
            return {**out, "seconds": time.perf_counter() - start}
        for line in reply.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                out["error"] = str(chunk["error"].get("message"))
            if chunk.get("usage"):
                out["completion_tokens"] = chunk["usage"]["completion_tokens"]
            for choice in chunk.get("choices", []):
                piece = choice["delta"].get("content")
                if piece and out["ttft_s"] is None:
                    out["ttft_s"] = time.perf_counter() - start
                out["answer"] += piece or ""
                out["finish_reason"] = choice.get("finish_reason") or out["finish_reason"]
    return {**out, "seconds": time.perf_counter() - start}


def _voice_instructions(port: int) -> str:
    """The instructions a new Realtime (voice) session of the server starts with."""
    import json

    from websockets.sync.client import connect
    from websockets.typing import Subprotocol

    url = f"ws://127.0.0.1:{port}/v1/realtime"
    with connect(url, subprotocols=[Subprotocol("realtime")], open_timeout=30) as ws:
        created = json.loads(ws.recv(timeout=30))
    return str(created["session"]["instructions"])


def run_model(name: str, questions: list[Question], args: argparse.Namespace) -> dict[str, Any]:
    """Start a server with `name`, ask every question, stop it; the rows and the server."""
    import httpx

    from app.settings import Settings
    from bench.answers.score import answer_length, in_language, match
    from bench.kit.log import log as bench_log
    from bench.kit.server import start_server
    from engine import default_quantization

    log = functools.partial(bench_log, bench="answers")

    server_args = argparse.Namespace(
        llm_backend="embedded",
        llm_model=name,
        port=args.port,
        ready_timeout=args.ready_timeout,
        server_log=None,
    )
    server, ready_s = start_server(server_args)
    rows: list[dict[str, Any]] = []
    try:
        instructions = _voice_instructions(server.port)
        with httpx.Client(base_url=server.base, timeout=httpx.Timeout(300.0)) as client:
            ask(client, instructions, WARMUP, args.max_tokens)
            for i, q in enumerate(questions, 1):
                reply = ask(client, instructions, q.text, args.max_tokens)
                matched = match(reply["answer"], q.accepted, q.keywords)
                rows.append(
                    {
                        "id": q.id,
                        "lang": q.lang,
                        "kind": q.kind,
                        "question": q.text,
                        "answer": reply["answer"],
                        "accepted": matched is not None,
                        "matched": matched,
                        "in_language": in_language(reply["answer"], q.lang),
                        "length": answer_length(reply["answer"], q.lang),
                        **{k: v for k, v in reply.items() if k != "answer"},
                    }
                )
                mark = "ok " if matched is not None else "-- "
                log(f"answers {name} {i}/{len(questions)} {mark}{q.id}: {reply['answer'][:60]!r}")
    finally:
        info = server.stop()
    settings = Settings.from_env(llm_backend="embedded", llm_model=name)
    return {
        "instructions": instructions,
        "quantization": settings.quantization or default_quantization(name),
        "server": {"ready_s": round(ready_s, 2), **info},
        "rows": rows,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import datetime
    import sys

    from app.settings import DEFAULT_SYSTEM_PROMPT
    from bench.answers.report import summarize
    from bench.kit.machine import describe

    if getattr(args, "voice_delegation", False):
        choose_models(f"{args.fast_model},{args.backend_model}")  # both prepared
        return voice_delegation.run(args, run_model)
    quick = bool(getattr(args, "quick", False))
    models = choose_models(args.models)
    questions = choose_questions(quick, args.per_language)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    instructions = ""
    for name in models:
        done = run_model(name, questions, args)
        results[name] = {
            "quantization": done["quantization"],
            "instructions_are_default": done["instructions"] == DEFAULT_SYSTEM_PROMPT,
            "languages": {
                lang: summarize([r for r in done["rows"] if r["lang"] == lang], lang)
                for lang in LANGS
                if any(r["lang"] == lang for r in done["rows"])
            },
            "server": done["server"],
            "questions": done["rows"],
        }
        instructions = done["instructions"]
    return {
        "benchmark": "answers",
        "quick": quick,
        "models": list(models),
        "questions": {lang: sum(q.lang == lang for q in questions) for lang in LANGS},
        "question_set_size": len(QUESTIONS),
        "max_tokens": args.max_tokens,
        "temperature": 0.0,
        "instructions": instructions,
        "path": "POST /v1/chat/completions, stream: true, one request at a time, on loopback",
        "ttft": "request sent to the first non-empty content delta, on the client",
        "length_units": {"en": "words", "zh": "characters (letters, digits, CJK)"},
        "machine": describe(),
        "command": " ".join(sys.argv),
        "utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - started, 1),
        "results": results,
    }


def format_table(result: dict[str, Any]) -> str:
    from bench.answers.report import table

    if result.get("mode") == "voice-delegation":
        return voice_delegation.format_table(result)
    return table(result)
