"""`bench answers --voice-delegation`: the English questions of bench/answers/questions.py
spoken (Piper, as `bench voice` speaks its questions) to a GPT-Live session whose fast
model delegates to a bigger one (`delegation.type: "responses"`), against each model
alone in the same run, as text and over voice.

Alone as text, each model answers the questions (`bench answers`' own run: a server with
that model, streamed chat completions). Alone over voice, each hears them as the
delegating session does (the same clips, ASR and Live WebSocket, no delegation): the
fast model in the plain sessions below, the backend model on a server of its own whose
live model it is (a Live session cannot choose its model). Delegated: for each route
(`R1VOICE_LIVE_DELEGATE`: "questions", the server's router on the transcript; "model",
the fast model's own `delegate` tool) a server with the fast model is started, and each
question is said twice, interleaved: to a Live session without delegation (the fast
model alone over voice: its voice-to-voice is the first-word target) and to one that
delegates to the backend model. Reported per route: the share delegated, accuracy of the
answer the user ends up with (the delegated answer, else the live model's own), of the
live model's own first words and of the backend's conclusion, time to the first spoken
word (P50/P95, the speech's last chunk -> the first audible sample) and to the delegated
answer. The accuracy target is judged against the backend model alone over voice (the
same ears); the gap to it as text is reported beside it."""

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


async def _spoken(
    port: int, backend: str, questions: list[Question], pcm: dict, kinds: tuple[str, ...]
) -> list[dict]:
    """Each question to a session of each kind ("plain", "delegating"), the order
    alternating question by question."""
    from bench.answers.spoken import ask, open_live

    plain = {"model": "gpt-live-1"}
    delegation = {"type": "responses", "responses": {"model": backend, "max_output_tokens": 96}}
    rows = []
    for n, q in enumerate([questions[0], *questions]):  # the first, untimed: loads the models
        row: dict[str, Any] = {"id": q.id, "question": q.text}
        for kind in kinds if n % 2 else kinds[::-1]:
            session = plain if kind == "plain" else {**plain, "delegation": delegation}
            conn = await open_live(port, session)
            try:
                turn = await ask(conn, pcm[q.id], TURN_TIMEOUT_S)
            finally:
                await conn.close()
            row[kind] = {**turn, **_verdicts(q, turn)}
        if n:
            rows.append(row)
            t = row[kinds[-1]]
            log(
                f"answers voice {n}/{len(questions)} {q.id}: heard {t['heard']!r} "
                f"delegated={t['delegated']} ok={t['accepted']} first {t['first_word_ms']} ms, "
                f"answer {t['delegated_answer_ms']} ms: "
                f"{(t['delegated_answer'] or t['own_answer'])[:50]!r}"
            )
    return rows


def _serve(
    model: str, route: str, args: argparse.Namespace, questions: list, pcm: dict
) -> dict[str, Any]:
    """A server whose live model is `model`; its plain sessions (and delegating ones,
    unless `model` is the backend's) asked every question."""
    import asyncio
    import os

    from bench.kit.server import start_server

    server_args = argparse.Namespace(
        port=args.port,
        llm_backend="embedded",
        llm_model=model,
        server_log=None,
        ready_timeout=args.ready_timeout,
    )
    kinds = ("plain",) if model == args.backend_model else ("plain", "delegating")
    load = os.getloadavg()
    server, _ = start_server(server_args, R1VOICE_LIVE_DELEGATE=route)
    try:
        rows = asyncio.run(_spoken(server.port, args.backend_model, questions, pcm, kinds))
    finally:
        info = server.stop()
    return {"load_before": load, "load_after": os.getloadavg(), "server": info, "rows": rows}


def _share(values: list[Any]) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A route's figures: the delegating sessions' and, beside them, the plain ones'."""
    from bench.voice.stats import summarize as spread

    d = [r["delegating"] for r in rows]
    return {
        "questions": len(rows),
        "delegated_share": _share([t["delegated"] for t in d]),
        "accuracy": _share([t["accepted"] for t in d]),
        "own_words_accuracy": _share([t["own_accepted"] for t in d]),
        "conclusion_accuracy": _share([t["conclusion_accepted"] for t in d]),
        "plain_accuracy": _share([r["plain"]["accepted"] for r in rows]),
        "first_word_ms": spread(t["first_word_ms"] for t in d),
        "plain_first_word_ms": spread(r["plain"]["first_word_ms"] for r in rows),
        "delegated_answer_ms": spread(t["delegated_answer_ms"] for t in d),
        "conclusion_ms": spread(t.get("concluded_ms") for t in d),
        "timeouts": sum(t["status"] != "completed" for t in d),
        "wrong": [r["id"] for r in rows if not r["delegating"]["accepted"]],
    }


def summarize_alone(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A model alone over voice: its plain sessions."""
    from bench.voice.stats import summarize as spread

    return {
        "questions": len(rows),
        "accuracy": _share([r["plain"]["accepted"] for r in rows]),
        "first_word_ms": spread(r["plain"]["first_word_ms"] for r in rows),
        "timeouts": sum(r["plain"]["status"] != "completed" for r in rows),
        "wrong": [r["id"] for r in rows if not r["plain"]["accepted"]],
    }


def judge(summary: dict[str, Any], backend_text: float, backend_voice: float | None) -> None:
    """The targets, into `summary`: accuracy within TARGET_POINTS of the backend model
    alone over voice (the same ears; as text beside it), the first word's P95 within
    the plain session's."""
    accuracy = summary["accuracy"]

    def below(reference: float | None) -> float | None:
        return (
            None
            if accuracy is None or reference is None
            else round((reference - accuracy) * 100, 1)
        )

    summary["points_below_backend"] = below(backend_text)
    summary["points_below_backend_voice"] = below(backend_voice)
    gap = summary["points_below_backend_voice"]
    summary["accuracy_target_met"] = None if gap is None else gap <= TARGET_POINTS
    p95 = summary["plain_first_word_ms"]["p95"]
    first = summary["first_word_ms"]["p95"]
    summary["first_word_target_met"] = None if p95 is None or first is None else first <= p95


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
    log(f"answers voice: {args.backend_model} alone, {len(questions)} questions")
    done = _serve(args.backend_model, "model", args, questions, pcm)
    result["voice_alone"] = {args.backend_model: {"summary": summarize_alone(done["rows"]), **done}}
    result["routes"] = {}
    for route in [r.strip() for r in args.routes.split(",") if r.strip()]:
        log(f"answers voice: route {route}, {len(questions)} questions, plain and delegating")
        done = _serve(args.fast_model, route, args, questions, pcm)
        result["routes"][route] = {"summary": summarize(done["rows"]), **done}
        if args.fast_model not in result["voice_alone"]:  # its plain sessions: alone
            summary = summarize_alone(done["rows"])
            result["voice_alone"][args.fast_model] = {"summary": summary, "route": route}
    backend_voice = result["voice_alone"][args.backend_model]["summary"]["accuracy"]
    for route in result["routes"].values():
        judge(route["summary"], result["alone"][args.backend_model]["accuracy"], backend_voice)
    result["command"] = " ".join(sys.argv)
    result["utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def _misses(rows: list[dict[str, Any]], kind: str) -> list[str]:
    """Each wrong answer: what was heard and what the user ended up hearing."""
    lines = []
    for r in rows:
        t = r[kind]
        if not t["accepted"]:
            said = " ".join((t["delegated_answer"] or t["own_answer"]).split())[:70]
            lines.append(f"    {r['id']:20} heard {t['heard'].strip()!r}: {said!r}")
    return lines


def format_table(result: dict[str, Any]) -> str:
    voice = result.get("voice_alone", {})
    lines = ["model alone                     text     voice"]
    for m, s in result["alone"].items():
        heard = voice[m]["summary"]["accuracy"] if m in voice else "-"
        lines.append(f"  {m:<30}{s['accuracy']!s:<9}{heard}")
    if result["backend_model"] in voice:
        lines += _misses(voice[result["backend_model"]]["rows"], "plain")
    lines.append(
        "route      delegated  accuracy  own words  conclusion  plain   first word P50/P95 "
        "(plain)          delegated answer P50/P95  points below backend voice (text)"
    )
    for route, r in result["routes"].items():
        s = r["summary"]
        fw, pf, da = s["first_word_ms"], s["plain_first_word_ms"], s["delegated_answer_ms"]
        lines.append(
            f"{route:<11}{s['delegated_share']!s:<11}{s['accuracy']!s:<10}"
            f"{s['own_words_accuracy']!s:<11}{s['conclusion_accuracy']!s:<12}"
            f"{s['plain_accuracy']!s:<8}{fw['p50']}/{fw['p95']} ({pf['p50']}/{pf['p95']}) ms   "
            f"{da['p50']}/{da['p95']} ms   "
            f"{s.get('points_below_backend_voice')} ({s.get('points_below_backend')})"
        )
        lines += _misses(r["rows"], "delegating")
    return "\n".join(lines)
