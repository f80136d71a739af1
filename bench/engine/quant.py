"""Quantization: none / int8 / int4 weight bytes, perplexity, greedy agreement and speed.

One run loads the model three ways (quantization "none", "int8", "int4" with
--group-size) and measures, for each: weight bytes as stored, perplexity on the fixed
evaluation text (tests/data/eval_text.txt, public-domain prose) through the engine's
own forward pass, greedy agreement with the unquantized model (fraction of generated
tokens equal, position by position, over fixed prompts), decode tokens/s with 1 and
with N concurrent sequences, and prefill tokens/s. Speed rounds alternate between the
variants so machine load hits all of them; the best round is reported, all listed.
transformers' static batch of N (fp32) is the throughput baseline; llama.cpp
(llama-cpp-python) is measured on the bundled GGUF only if it happens to be importable.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.engine.prompts import QUESTIONS

EVAL_TEXT = Path(__file__).resolve().parents[2] / "tests" / "data" / "eval_text.txt"
EXTRA_QUESTIONS = [
    "Describe a rainy day in the city.",
    "What should I cook for dinner tonight?",
    "Explain what a neural network is to a child.",
    "Why do cats purr?",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--group-size", type=int, default=32, help="int4 group size (SmolLM2: 32 or 64)"
    )
    parser.add_argument("--streams", type=int, default=32, help="concurrent sequences")
    parser.add_argument("--rounds", type=int, default=None, help="speed rounds (quick: 2, 3)")
    parser.add_argument("--num-threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--skip-transformers", action="store_true")


def _eval_ids(tokenizer: Any) -> list[int]:
    lines = EVAL_TEXT.read_text().splitlines(keepends=True)
    return list(tokenizer.encode("".join(x for x in lines if not x.startswith("#"))))


def _timed(llm: Any, prompts: list[list[int]], params: Any) -> tuple[int, float]:
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    return sum(len(o.token_ids) for o in outs), time.perf_counter() - start


def _llama_cpp(gguf: Path, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
    try:
        import llama_cpp  # type: ignore[import-not-found]
    except ImportError:
        return {"skipped": "llama_cpp (llama-cpp-python) is not importable"}
    import torch

    llm = llama_cpp.Llama(
        model_path=str(gguf), n_threads=torch.get_num_threads(), n_ctx=1024, verbose=False
    )
    n, seconds = 0, 0.0
    for p in prompts:
        start = time.perf_counter()
        for i, _ in enumerate(llm.generate(p, temp=0.0, reset=True)):
            if i + 1 >= max_tokens:
                break
        seconds += time.perf_counter() - start
        n += max_tokens
    return {"single_stream_tokens_per_s": round(n / seconds, 2), "gguf": gguf.name}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from bench.engine.transformers_peer import TransformersPeer
    from engine import (
        BUNDLED_LLMS,
        LLM,
        QuantCache,
        SamplingParams,
        bundled_gguf_path,
        perplexity,
        resolve_model,
        weight_bytes,
    )

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    quick = bool(getattr(args, "quick", False))
    n_prompts, agree_tokens = (8, 32) if quick else (20, 64)
    decode_tokens = 32 if quick else 64
    eval_tokens = 512 if quick else None
    rounds = args.rounds or (2 if quick else 3)
    variants = {"none": {}, "int8": {}, "int4": {"quantization_group_size": args.group_size}}

    engines: dict[str, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    model_dir = resolve_model(args.model)
    for name, extra in variants.items():
        cached = None  # whether this load finds its quantized weights on disk
        if name != "none":
            cached = QuantCache(model_dir, name, args.group_size).path.is_file()
        start = time.perf_counter()
        llm = LLM(
            args.model,
            quantization=name,
            max_num_seqs=max(args.streams, 8),
            enable_prefix_caching=False,  # every prefill is measured in full
            **extra,
        )
        engines[name] = llm
        results[name] = {
            "load_s": round(time.perf_counter() - start, 2),
            "weight_bytes": weight_bytes(llm.model),
        }
        if cached is not None:
            results[name]["quantized_cache_on_disk"] = cached
    base = engines["none"]
    tok = base.tokenizer

    def chat(q: str) -> list[int]:
        enc = tok.apply_chat_template(
            [{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True
        )
        return list(enc["input_ids"] if hasattr(enc, "keys") else enc)

    questions = QUESTIONS + EXTRA_QUESTIONS
    agree_prompts = [chat(q) for q in questions[:n_prompts]]
    eval_ids = _eval_ids(tok)[:eval_tokens]
    greedy = SamplingParams(max_tokens=agree_tokens, temperature=0.0, ignore_eos=True)
    reference = [o.token_ids for o in base.generate(agree_prompts, greedy)]
    for name, llm in engines.items():
        r = results[name]
        r["weight_bytes_vs_none"] = round(r["weight_bytes"] / results["none"]["weight_bytes"], 3)
        r["perplexity"] = round(perplexity(llm, eval_ids), 3)
        got = [o.token_ids for o in llm.generate(agree_prompts, greedy)]
        pairs = [
            (a, b) for x, y in zip(reference, got, strict=True) for a, b in zip(x, y, strict=True)
        ]
        r["greedy_agreement"] = round(sum(a == b for a, b in pairs) / len(pairs), 3)

    batch = [chat(questions[i % len(questions)]) for i in range(args.streams)]
    decode = SamplingParams(max_tokens=decode_tokens, temperature=0.0, ignore_eos=True)
    prefill_prompt = [eval_ids[:256]]
    one_token = SamplingParams(max_tokens=1, temperature=0.0, ignore_eos=True)
    speed: dict[str, dict[str, list[float]]] = {
        n: {"decode_1": [], f"decode_{args.streams}": [], "prefill": []} for n in engines
    }
    for llm in engines.values():  # warm up every kernel
        llm.generate(batch[:2], SamplingParams(max_tokens=4, temperature=0.0))
    for _ in range(rounds):  # interleaved: load changes hit every variant alike
        for name, llm in engines.items():
            n, dt = 0, 0.0
            for p in batch[:2]:
                k, t = _timed(llm, [p], decode)
                n, dt = n + k, dt + t
            speed[name]["decode_1"].append(n / dt)
            n, dt = _timed(llm, batch, decode)
            speed[name][f"decode_{args.streams}"].append(n / dt)
            _, dt = _timed(llm, prefill_prompt, one_token)
            speed[name]["prefill"].append(len(prefill_prompt[0]) / dt)
    for name, runs in speed.items():
        for key, values in runs.items():
            results[name][f"{key}_tokens_per_s"] = round(max(values), 2)
            results[name][f"{key}_tokens_per_s_rounds"] = [round(v, 2) for v in values]

    baselines: dict[str, Any] = {}
    if not args.skip_transformers:
        hf = TransformersPeer(base.model_path, "float32", True, set())
        hf.warmup(batch[0])
        baselines["transformers_static_batch"] = hf.static_batch(batch, decode_tokens)
        del hf
    gguf: Path | None = None
    if args.model in BUNDLED_LLMS:
        try:
            gguf = bundled_gguf_path(args.model)
        except Exception:
            gguf = None
    if gguf is not None:
        baselines["llama_cpp"] = _llama_cpp(gguf, batch[:2], decode_tokens)
        from bench.engine.gguf_grid import measure

        grid = measure(gguf)  # Q4_K sub-blocks on our int4 g32 grid (none in SmolLM2's Q4_1)
        if grid["q4_k_tensors"]:
            baselines["gguf_q4_k_on_int4_g32"] = {k: v for k, v in grid.items() if k != "tensors"}
    else:
        baselines["llama_cpp"] = {"skipped": "no bundled GGUF for this model"}

    ratios: dict[str, float] = {}
    int8 = results["int8"]
    ratios["int8_weight_bytes_vs_none"] = int8["weight_bytes_vs_none"]
    for name in ("int8", "int4"):
        for key in ("decode_1", f"decode_{args.streams}", "prefill"):
            ratios[f"{name}_{key}_vs_none"] = round(
                results[name][f"{key}_tokens_per_s"] / results["none"][f"{key}_tokens_per_s"], 2
            )
        ratios[f"{name}_perplexity_vs_none"] = round(
            results[name]["perplexity"] / results["none"]["perplexity"], 4
        )
    if "transformers_static_batch" in baselines:
        ratios[f"int8_decode_{args.streams}_vs_transformers_static_batch"] = round(
            int8[f"decode_{args.streams}_tokens_per_s"]
            / baselines["transformers_static_batch"]["tokens_per_s"],
            2,
        )
    cpp = baselines["llama_cpp"].get("single_stream_tokens_per_s")
    if cpp:
        ratios["int8_decode_1_vs_llama_cpp"] = round(int8["decode_1_tokens_per_s"] / cpp, 2)
    return {
        "model": args.model,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "int4_group_size": args.group_size,
        "eval_tokens": len(eval_ids),
        "agreement_prompts": n_prompts,
        "agreement_tokens": agree_tokens,
        "decode_tokens": decode_tokens,
        "streams": args.streams,
        "prefill_prompt_tokens": len(prefill_prompt[0]),
        "variants": results,
        "baselines": baselines,
        "ratios": ratios,
    }
