"""A long call in `bench engine`: long typed turns past the context, turn by turn.

The path a Realtime answer takes (app.realtime.conversation.Conversation.history fits
the history into the context minus the answer's tokens, then the embedded backend
streams the answer), without the WebSocket around it: a scripted conversation of
``--long-turn-tokens`` user turns, each answered greedily (``--long-answer-tokens``),
until ``--long-turns`` turns, well past the context (``--long-context``, default the
model's). Run twice on one engine, with an empty prefix cache before each: with the
history's low-water trim (TRIM_LOW_WATER) and with the trim of before issue 29 (low
water 1.0: drop just enough, the oldest turn each time). Reported per turn: seconds,
prompt and cached tokens, items dropped; per run the median turn before the first trim
(its last three turns) and after it, and their ratio (the target: at most 1.5).

Also the prefill of one long prompt (``--long-prefill-tokens``, default 7500) against
the same number of tokens as 512-token prompts (the target: within 2x).
``--long-prefill-only`` runs just that, once per ``--attention-bf16`` mode (engines side
by side in one process, rounds interleaved, best of ``--rounds``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

SENTENCES = [
    "I have been thinking about the garden we planted behind the old stone house.",
    "The tomatoes came up early this year, but the beans took their time.",
    "My neighbour says the soil needs more compost before the winter comes.",
    "We also talked about building a small greenhouse out of recycled windows.",
    "Last weekend the children painted the fence a bright shade of blue.",
    "Do you think rain water from the roof is good enough for the vegetables?",
]
CHUNK = 512  # the prompt size `bench engine` measures prefill at


def _turn_text(n: int, tokens: int) -> str:
    """About ``tokens`` tokens of a user's long typed turn (~16 tokens a sentence)."""
    words = [f"Turn {n}."]
    for i in range(max(1, tokens // 16)):
        words.append(SENTENCES[(n + i) % len(SENTENCES)])
    return " ".join(words)


async def _call(
    backend: Any, turns: int, turn_tokens: int, answer_tokens: int, low_water: float
) -> list[dict[str, Any]]:
    from app.llm import GenerationParams
    from app.realtime.conversation import Conversation, Item

    conv, rows = Conversation(), []
    params = GenerationParams(max_tokens=answer_tokens)
    budget = backend.context_length - answer_tokens  # as app/realtime/responses/response.py
    for n in range(turns):
        conv.add(Item(id=f"u{n}", role="user", text=_turn_text(n, turn_tokens)))
        start = time.perf_counter()
        out = await conv.history(
            "You are a helpful voice assistant. Answer briefly.",
            budget,
            backend.count_tokens,
            low_water=low_water,
        )
        text, final = "", None
        async for delta in backend.stream_chat(out.messages, params, f"long-{low_water}-{n}"):
            text += delta.text
            final = delta if delta.finished else final
        seconds = time.perf_counter() - start
        assert final is not None
        conv.add(Item(id=f"a{n}", role="assistant", text=text))
        rows.append(
            {
                "turn": n,
                "seconds": round(seconds, 2),
                "prompt_tokens": final.prompt_tokens,
                "cached_tokens": final.cached_tokens or 0,
                "dropped_items": len(out.dropped),
            }
        )
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    first = next((r["turn"] for r in rows if r["dropped_items"]), None)
    if first is None:
        return {"turns": rows, "first_trim_turn": None}
    before = [r["seconds"] for r in rows[max(0, first - 3) : first]]
    after = [r["seconds"] for r in rows[first:]]
    median_before, median_after = statistics.median(before), statistics.median(after)
    return {
        "turns": rows,
        "first_trim_turn": first,
        "median_turn_s_before_trim": round(median_before, 2),
        "median_turn_s_after_trim": round(median_after, 2),
        "max_turn_s_after_trim": max(after),
        "after_over_before": round(median_after / median_before, 2),
        "cached_share_after_trim": round(
            sum(r["cached_tokens"] for r in rows[first:])
            / max(1, sum(r["prompt_tokens"] for r in rows[first:])),
            3,
        ),
    }


def _prefill_s(llm: Any, prompt: list[int]) -> float:
    from engine import SamplingParams

    asyncio.run(llm.free_all())  # no prefix cache: the whole prompt is computed
    start = time.perf_counter()
    asyncio.run(llm.generate(prompt, SamplingParams(max_tokens=1, temperature=0.0)))
    return time.perf_counter() - start


def _prefill(llm: Any, tokens: int) -> dict[str, Any]:
    import torch

    gen = torch.Generator().manual_seed(0)
    vocab = int(llm.engine.model_config.vocab_size)
    long_prompt = torch.randint(vocab, (tokens,), generator=gen).tolist()
    chunks = [long_prompt[i : i + CHUNK] for i in range(0, tokens, CHUNK)]
    chunked = sum(_prefill_s(llm, chunk) for chunk in chunks)
    long_s = _prefill_s(llm, long_prompt)
    return {
        "prompt_tokens": tokens,
        "long_prompt_s": round(long_s, 2),
        f"as_{CHUNK}_token_prompts_s": round(chunked, 2),
        "ratio": round(long_s / chunked, 2),
    }


def run_long_prefill(args: Any, quick: bool) -> dict[str, Any]:
    """The long prefill against 512-token prompts, per attention_bf16 mode, interleaved."""
    import torch

    from bench.kit.machine import describe
    from engine import LLM, SamplingParams

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    modes = [m.strip() for m in args.attention_bf16.split(",") if m.strip()]
    settings: dict[str, Any] = {"quantization": args.quantization}
    if args.long_context:
        settings["max_model_len"] = args.long_context
    engines = {mode: LLM(args.model, attention_bf16=mode, **settings) for mode in modes}
    first = next(iter(engines.values()))
    tokens = min(args.long_prefill_tokens or (1500 if quick else 7500), first.max_model_len - 1)
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(int(first.model_config.vocab_size), (tokens,), generator=gen).tolist()
    chunks = [prompt[i : i + CHUNK] for i in range(0, tokens, CHUNK)]
    params = SamplingParams(max_tokens=1, temperature=0.0)

    def seconds(llm: Any, ids: list[int]) -> float:
        llm.free_all()  # no prefix cache: the whole prompt is computed
        start = time.perf_counter()
        llm.generate(ids, params)
        return time.perf_counter() - start

    times: dict[str, dict[str, list[float]]] = {m: {"long": [], "chunked": []} for m in modes}
    try:
        for _ in range(args.rounds or (1 if quick else 2)):
            for mode, llm in engines.items():
                times[mode]["chunked"].append(sum(seconds(llm, c) for c in chunks))
                times[mode]["long"].append(seconds(llm, prompt))
        resolved = {m: llm.model_runner.attention_bf16 for m, llm in engines.items()}
    finally:
        for llm in engines.values():
            llm.close()
    rows = {}
    for mode, t in times.items():
        long_s, chunked_s = min(t["long"]), min(t["chunked"])
        rows[mode] = {
            "bf16_mask": resolved[mode],
            "long_prompt_s": round(long_s, 2),
            f"as_{CHUNK}_token_prompts_s": round(chunked_s, 2),
            "ratio": round(long_s / chunked_s, 2),
            "runs_s": {k: [round(x, 2) for x in v] for k, v in t.items()},
        }
    return {
        "model": args.model,
        "quantization": args.quantization,
        "prompt_tokens": tokens,
        "machine": describe(),
        "modes": rows,
    }


def run_long_call(args: Any, quick: bool) -> dict[str, Any]:
    """Both trims on one embedded backend, then the long prefill; the machine described."""
    from app.llm.embedded import EmbeddedBackend
    from app.realtime.conversation import TRIM_LOW_WATER
    from bench.kit.machine import describe

    context = args.long_context or (1024 if quick else None)
    turn_tokens = args.long_turn_tokens or (160 if quick else 750)
    turns = args.long_turns or (10 if quick else 16)
    answer_tokens = args.long_answer_tokens
    engine_kwargs: dict[str, Any] = {"quantization": args.quantization}
    if context:
        engine_kwargs["max_model_len"] = context
    if args.num_threads:
        engine_kwargs["num_threads"] = args.num_threads
    backend = EmbeddedBackend(args.model, **engine_kwargs)
    try:
        backend.warmup()
        runs = {}
        for name, low_water in (("low_water_trim", TRIM_LOW_WATER), ("oldest_turn_trim", 1.0)):
            asyncio.run(backend.llm.free_all())
            rows = asyncio.run(_call(backend, turns, turn_tokens, answer_tokens, low_water))
            runs[name] = {"low_water": low_water, **_summary(rows)}
        prefill_tokens = args.long_prefill_tokens or (1500 if quick else 7500)
        prefill = _prefill(backend.llm, min(prefill_tokens, backend.context_length - 1))
    finally:
        asyncio.run(backend.close())
    return {
        "model": args.model,
        "quantization": args.quantization,
        "context_tokens": backend.context_length,
        "turn_tokens": turn_tokens,
        "answer_tokens": answer_tokens,
        "quick": quick,
        "machine": describe(),
        "runs": runs,
        "long_prefill": prefill,
    }
