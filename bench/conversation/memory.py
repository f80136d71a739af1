"""Memory of a long call: does the model still know the user's name, city and number
after 80 typed turns have outgrown its context, with `history: summarize` and `drop`?

One in-process Realtime session per model and mode (the real `Session`, the server's
components, text answers, greedy): the user states a name, a city and a number in the
first three turns, then asks about other things until the history has been trimmed
several times, then asks for each of the three. The session's conversation sees the
model through a context of `--context` tokens (the engine is the bundled model's, as
served), so the turns overflow it. Before each turn the bench waits for a summary still
being written, as a caller's next sentence would take seconds. An answer is right when
it contains the fact (case-insensitive). Reported per model and mode: the facts recalled,
the answers, the trims (items deleted) and each summary written. Quality
is reported, never asserted.

`r1voice bench conversation --memory-only` runs this part alone (the other parts of
`bench conversation` live beside it); `--quick`: 27 turns in a 1024-token context.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from app.protocol.server_events import ItemDeleted, ResponseDone, ga

FACTS = (  # (the turn that states it, the question at the end, what the answer must hold)
    ("name", "Hi! My name is Ingrid Halvorsen. Please remember it.", "What is my name?", "Ingrid"),
    ("city", "I live in Trondheim, in Norway.", "Which city do I live in?", "Trondheim"),
    (
        "number",
        "My membership number is 58213. Keep it in mind, I will need it later.",
        "What is my membership number?",
        "58213",
    ),
)
TOPICS = (
    "the tides",
    "how bread rises",
    "the planet Mars",
    "why the sky is blue",
    "honey bees",
    "the first bicycles",
    "volcanoes",
    "how a violin makes sound",
    "the Roman roads",
    "coral reefs",
    "paper making",
    "the northern lights",
    "chess openings",
    "how clouds form",
    "lighthouses",
    "the history of tea",
    "glaciers",
    "owls",
    "the printing press",
    "rainbows",
)
TURNS, QUICK_TURNS = 80, 27
CONTEXT, QUICK_CONTEXT = 2048, 1024
MODES = ("summarize", "drop")
NAME = "conversation --memory-only"  # the result's "bench"


def add_memory_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", default=None, help="comma-separated (default: all prepared)")
    parser.add_argument("--modes", default=",".join(MODES), help="history modes to compare")
    parser.add_argument("--turns", type=int, default=None, help=f"default {TURNS} (quick: 27)")
    parser.add_argument(
        "--context",
        type=int,
        default=None,
        help=f"tokens the conversation sees (default {CONTEXT})",
    )
    parser.add_argument("--max-tokens", type=int, default=48, help="per answer")


def script(turns: int) -> list[str]:
    """The user's turns: the three facts, small talk to fill the context, the questions."""
    fillers = turns - 2 * len(FACTS)
    if fillers < 0:
        raise SystemExit(f"error: --turns must be at least {2 * len(FACTS)}")
    talk = [
        f"Now something else. Tell me one interesting thing about {TOPICS[n % len(TOPICS)]}, "
        "in a sentence or two; I am just curious and there is no hurry."
        for n in range(fillers)
    ]
    return [f[1] for f in FACTS] + talk + [f[2] for f in FACTS]


def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    from bench.kit.models import choose_models

    turns = args.turns or (QUICK_TURNS if args.quick else TURNS)
    context = args.context or (QUICK_CONTEXT if args.quick else CONTEXT)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if bad := [m for m in modes if m not in MODES]:
        raise SystemExit(f"error: unknown history modes {bad}; known: {', '.join(MODES)}")
    runs = []
    for model in choose_models(args.models):
        runs += asyncio.run(_run_model(model, modes, script(turns), context, args.max_tokens))
    return {
        "bench": NAME,
        "turns": turns,
        "context_tokens": context,
        "max_output_tokens": args.max_tokens,
        "facts": {name: expected for name, _, _, expected in FACTS},
        "runs": runs,
    }


async def _run_model(
    model: str, modes: list[str], turns: list[str], context: int, max_tokens: int
) -> list[dict[str, Any]]:
    from app.components import close_components, load_components
    from app.settings import Settings

    components = await asyncio.to_thread(load_components, Settings(llm_model=model, warmup=False))
    try:
        await asyncio.to_thread(components.llm.warmup)
        return [
            await _run_call(components, model, mode, turns, context, max_tokens) for mode in modes
        ]
    finally:
        await close_components(components)


async def _run_call(
    components: Any, model: str, mode: str, turns: list[str], context: int, max_tokens: int
) -> dict[str, Any]:
    import dataclasses

    from app.realtime.session import Session
    from bench.conversation.context_window import ContextWindow

    llm = ContextWindow(components.llm, context)
    session = Session(components=dataclasses.replace(components, llm=llm))
    await session.start()
    update = {"output_modalities": ["text"], "type": "realtime", "r1voice": {"history": mode}}
    await session.handle(json.dumps({"type": "session.update", "session": update}))
    counts = {"deleted": 0, "summaries": 0, "errors": 0}
    answers: list[str] = []
    summaries: list[str] = []
    start = time.perf_counter()
    for text in turns:
        await session.summary.settled()  # a caller's next turn takes seconds
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        await session.handle(json.dumps({"type": "conversation.item.create", "item": item}))
        create = {"type": "response.create", "response": {"max_output_tokens": max_tokens}}
        await session.handle(json.dumps(create))
        while True:
            event = await session.outbox.get()
            assert event is not None
            kind = event["type"]
            if kind == ItemDeleted.TYPE:
                counts["deleted"] += 1
            elif kind == ga.ITEM_ADDED and event["item"]["role"] == "system":
                counts["summaries"] += 1
                summaries.append(event["item"]["content"][0]["text"])
            elif kind == "error":
                counts["errors"] += 1
            elif kind == ResponseDone.TYPE:
                output = event["response"]["output"]
                part = output[0]["content"][0] if output else {}
                answers.append(part.get("text") or part.get("transcript") or "")
                break
    seconds = time.perf_counter() - start
    await session.close()
    finals = answers[-len(FACTS) :]
    recalled = {
        name: expected.lower() in answer.lower()
        for (name, _, _, expected), answer in zip(FACTS, finals, strict=True)
    }
    return {
        "model": model,
        "history": mode,
        "recalled": recalled,
        "score": sum(recalled.values()),
        "answers": dict(zip([f[0] for f in FACTS], finals, strict=True)),
        **counts,
        "summary_texts": summaries,  # each summary, in the order they were written
        "seconds": round(seconds, 1),
    }


def format_table(result: dict[str, Any]) -> str:
    head = (
        f"bench conversation --memory-only: {result['turns']} turns, "
        f"{result['context_tokens']}-token context, {result['max_output_tokens']} tokens an answer"
    )
    lines = [head, f"{'model':<30} {'history':<10} {'recalled':<24} deleted summaries  s"]
    for r in result["runs"]:
        got = ",".join(name for name, ok in r["recalled"].items() if ok) or "-"
        recalled = f"{r['score']}/{len(r['recalled'])} {got}"
        lines.append(
            f"{r['model']:<30} {r['history']:<10} {recalled:<24} {r['deleted']:>7} "
            f"{r['summaries']:>9} {r['seconds']:>5}"
        )
    for r in result["runs"]:
        lines.append(f"\n{r['model']} / {r['history']}:")
        lines += [f"  {name}: {answer!r}" for name, answer in r["answers"].items()]
        if r["summary_texts"]:
            lines.append(f"  last summary: {r['summary_texts'][-1]!r}")
    return "\n".join(lines)
