"""`bench answers --voice-delegation`: the English questions of bench/answers/questions.py
spoken (Piper, as `bench voice` speaks its questions) to a GPT-Live session whose fast
model delegates to a bigger one (`delegation.type: "responses"`), against each model
alone in the same run.

Alone, each model answers the questions as text (`bench answers`' own run: a server with
that model, streamed chat completions). Spoken, one server runs the fast model; for
each route (`R1VOICE_LIVE_DELEGATE`: "questions", the server's router on the transcript;
"model", the fast model's own `delegate` tool) a server is started, and each question is
said twice, interleaved: to a Live session without delegation (the fast model alone over
voice: its voice-to-voice is the first-word target) and to one that delegates to the
backend model. Reported per route: the share delegated, accuracy of the answer the user
ends up with (the delegated answer, else the live model's own), of the live model's own
first words and of the backend's conclusion, time to the first spoken word (P50/P95, the
speech's last chunk -> the first audible sample) and to the delegated answer."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench.answers.questions import Question
from bench.kit.log import log

TARGET_POINTS = 3.0  # accuracy within this many points of the backend model alone
TURN_TIMEOUT_S = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--voice-delegation",
        action="store_true",
        help="speak the English questions to a Live session that delegates (see below)",
    )
    parser.add_argument("--fast-model", default="smollm2-135m-instruct", help="the live model")
    parser.add_argument(
        "--backend-model", default="qwen2.5-coder-1.5b-instruct", help="the delegated model"
    )
    parser.add_argument(
        "--routes", default="questions,model", help="R1VOICE_LIVE_DELEGATE values to run"
    )


def _clips(questions: list[Question]) -> dict[str, bytes]:
    import numpy as np

    from app.audio import PROTOCOL_RATE, float_to_pcm16
    from app.catalog import registry
    from app.speech.piper_tts import PiperTTS
    from bench.voice.workload import TTS_VOICE, trim_silence

    tts = PiperTTS(registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    pcm = {}
    for q in questions:
        samples = np.asarray(tts.synthesize(q.text, PROTOCOL_RATE), dtype=np.float32)
        pcm[q.id] = float_to_pcm16(trim_silence(samples, PROTOCOL_RATE))
    return pcm


def _verdicts(q: Question, turn: dict[str, Any]) -> dict[str, Any]:
    from bench.answers.score import match

    final = turn["delegated_answer"] if turn.get("delegated_answer") else turn["own_answer"]
    return {
        "accepted": match(final, q.accepted, q.keywords) is not None,
        "own_accepted": match(turn["own_answer"], q.accepted, q.keywords) is not None,
        "conclusion_accepted": None
        if turn.get("conclusion") is None
        else match(turn["conclusion"], q.accepted, q.keywords) is not None,
    }


async def _spoken(port: int, backend: str, questions: list[Question], pcm: dict) -> list[dict]:
    """Each question to a plain session and to a delegating one, in alternating order."""
    from bench.answers.spoken import ask, open_live

    plain = {"model": "gpt-live-1"}
    delegation = {"type": "responses", "responses": {"model": backend, "max_output_tokens": 96}}
    rows = []
    for n, q in enumerate([questions[0], *questions]):  # the first, untimed: loads the backend
        row: dict[str, Any] = {"id": q.id, "question": q.text}
        order = ["plain", "delegating"] if n % 2 else ["delegating", "plain"]
        for kind in order:
            session = plain if kind == "plain" else {**plain, "delegation": delegation}
            conn = await open_live(port, session)
            try:
                turn = await ask(conn, pcm[q.id], TURN_TIMEOUT_S)
            finally:
                await conn.close()
            row[kind] = {**turn, **_verdicts(q, turn)}
        if n:
            rows.append(row)
            d = row["delegating"]
            log(
                f"answers voice {n}/{len(questions)} {q.id}: delegated={d['delegated']} "
                f"ok={d['accepted']} first {d['first_word_ms']} ms, answer "
                f"{d['delegated_answer_ms']} ms: {d['delegated_answer'][:50]!r}"
            )
    return rows


def _route(route: str, args: argparse.Namespace, questions: list, pcm: dict) -> dict[str, Any]:
    import asyncio
    import os

    from bench.kit.server import start_server

    server_args = argparse.Namespace(
        port=args.port,
        llm_backend="embedded",
        llm_model=args.fast_model,
        server_log=None,
        ready_timeout=args.ready_timeout,
    )
    load = os.getloadavg()
    server, _ = start_server(server_args, R1VOICE_LIVE_DELEGATE=route)
    try:
        rows = asyncio.run(_spoken(server.port, args.backend_model, questions, pcm))
    finally:
        info = server.stop()
    return {"load_before": load, "load_after": os.getloadavg(), "server": info, "rows": rows}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.voice.stats import summarize as spread

    def share(kind: str, key: str) -> float | None:
        values = [r[kind][key] for r in rows if r[kind][key] is not None]
        return round(sum(values) / len(values), 4) if values else None

    d = [r["delegating"] for r in rows]
    return {
        "questions": len(rows),
        "delegated_share": share("delegating", "delegated"),
        "accuracy": share("delegating", "accepted"),
        "own_words_accuracy": share("delegating", "own_accepted"),
        "conclusion_accuracy": share("delegating", "conclusion_accepted"),
        "plain_accuracy": share("plain", "accepted"),
        "first_word_ms": spread(t["first_word_ms"] for t in d),
        "plain_first_word_ms": spread(r["plain"]["first_word_ms"] for r in rows),
        "delegated_answer_ms": spread(t["delegated_answer_ms"] for t in d),
        "conclusion_ms": spread(t.get("concluded_ms") for t in d),
        "timeouts": sum(t["status"] != "completed" for t in d),
        "wrong": [r["id"] for r in rows if not r["delegating"]["accepted"]],
    }


def run(args: argparse.Namespace, alone: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """`alone(model, questions, args)`: bench answers' run of one model as text."""
    import datetime
    import sys

    from bench.answers.questions import QUESTIONS, QUICK
    from bench.answers.report import summarize as text_summary
    from bench.kit.machine import describe

    started = time.perf_counter()
    quick = bool(getattr(args, "quick", False))
    pool = [q for q in QUESTIONS if q.lang == "en" and (q.id in QUICK or not quick)]
    questions = pool[: args.per_language] if args.per_language else pool
    result: dict[str, Any] = {"benchmark": "answers", "mode": "voice-delegation", "quick": quick}
    result |= {"fast_model": args.fast_model, "backend_model": args.backend_model}
    result["machine"] = describe()
    result["alone"] = {}
    for model in (args.fast_model, args.backend_model):
        rows = alone(model, questions, args)["rows"]
        result["alone"][model] = text_summary(rows, "en") | {"questions_rows": rows}
    pcm = _clips(questions)
    result["routes"] = {}
    for route in [r.strip() for r in args.routes.split(",") if r.strip()]:
        log(f"answers voice: route {route}, {len(questions)} questions, plain and delegating")
        done = _route(route, args, questions, pcm)
        result["routes"][route] = {"summary": summarize(done["rows"]), **done}
    backend = result["alone"][args.backend_model]["accuracy"]
    for route in result["routes"].values():
        s = route["summary"]
        s["points_below_backend"] = (
            None if s["accuracy"] is None else round((backend - s["accuracy"]) * 100, 1)
        )
        s["accuracy_target_met"] = (
            None if s["accuracy"] is None else s["points_below_backend"] <= TARGET_POINTS
        )
        p95 = s["plain_first_word_ms"]["p95"]
        first = s["first_word_ms"]["p95"]
        s["first_word_target_met"] = None if p95 is None or first is None else first <= p95
    result["command"] = " ".join(sys.argv)
    result["utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def format_table(result: dict[str, Any]) -> str:
    alone = result["alone"]
    lines = ["model alone (text)          accuracy"]
    lines += [f"  {m:<26}{s['accuracy']}" for m, s in alone.items()]
    lines.append(
        "route      delegated  accuracy  own words  conclusion  plain   first word P50/P95 "
        "(plain)          delegated answer P50/P95"
    )
    for route, r in result["routes"].items():
        s = r["summary"]
        fw, pf, da = s["first_word_ms"], s["plain_first_word_ms"], s["delegated_answer_ms"]
        lines.append(
            f"{route:<11}{s['delegated_share']!s:<11}{s['accuracy']!s:<10}"
            f"{s['own_words_accuracy']!s:<11}{s['conclusion_accuracy']!s:<12}"
            f"{s['plain_accuracy']!s:<8}{fw['p50']}/{fw['p95']} ({pf['p50']}/{pf['p95']}) ms   "
            f"{da['p50']}/{da['p95']} ms"
        )
    return "\n".join(lines)
