"""`r1voice bench engine --int8-paths vnni,measure`: the int8 paths side by side.

One engine per ``int8_kernel`` mode in one process, rounds interleaved, best of the
rounds: the prefill of one ``--prefill-tokens`` prompt (prefix cache emptied) and the
decode of ``--streams`` streams at once. The paths are bit-identical
(engine/layers/kernel_choice.py), so this measures speed only; the tokens are checked
to agree."""

from __future__ import annotations

import time
from typing import Any


def run_int8_paths(args: Any, quick: bool) -> dict[str, Any]:
    import torch

    from bench.kit.machine import describe
    from engine import LLM, SamplingParams

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    modes = [m.strip() for m in args.int8_paths.split(",") if m.strip()]
    engines = {m: LLM(args.model, quantization="int8", int8_kernel=m) for m in modes}
    first = next(iter(engines.values()))
    vocab = int(first.model_config.vocab_size)
    gen = torch.Generator().manual_seed(0)
    prefill_tokens = min(args.prefill_tokens, 128 if quick else args.prefill_tokens)
    streams = min(args.streams, 4 if quick else args.streams)
    max_tokens = args.max_tokens or (8 if quick else 64)
    stream_prompts = [torch.randint(vocab, (16,), generator=gen).tolist() for _ in range(streams)]
    decode = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    one = SamplingParams(max_tokens=1, temperature=0.0)
    best: dict[str, dict[str, float]] = {m: {"prefill": 0.0, "streams": 0.0} for m in modes}
    answers: dict[str, list[list[int]]] = {}
    try:
        for _ in range(args.rounds or (1 if quick else 4)):
            prompt = torch.randint(vocab, (prefill_tokens,), generator=gen).tolist()
            for mode, llm in engines.items():
                llm.free_all()
                start = time.perf_counter()
                llm.generate(prompt, one)
                rate = prefill_tokens / (time.perf_counter() - start)
                best[mode]["prefill"] = max(best[mode]["prefill"], rate)
                llm.free_all()
                start = time.perf_counter()
                outs = llm.generate(stream_prompts, decode)
                rate = streams * max_tokens / (time.perf_counter() - start)
                best[mode]["streams"] = max(best[mode]["streams"], rate)
                answers[mode] = [o.token_ids for o in outs]
        paths = {m: llm.stats().int8_paths for m, llm in engines.items()}
    finally:
        for llm in engines.values():
            llm.close()
    base = best[modes[0]]
    return {
        "model": args.model,
        "prefill_tokens": prefill_tokens,
        "streams": streams,
        "max_tokens": max_tokens,
        "machine": describe(),
        "same_tokens": all(a == answers[modes[0]] for a in answers.values()),
        "modes": {
            m: {
                "prefill_tokens_per_s": round(best[m]["prefill"], 1),
                "streams_tokens_per_s": round(best[m]["streams"], 1),
                f"prefill_vs_{modes[0]}": round(best[m]["prefill"] / base["prefill"], 2),
                f"streams_vs_{modes[0]}": round(best[m]["streams"] / base["streams"], 2),
                "int8_paths": paths[m],
            }
            for m in modes
        },
    }
