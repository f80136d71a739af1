"""The sides of `bench decode`, each built in a process of its own (bench/kit/
peer_process.py): our engine with a speculative mode, and llama.cpp on the same GGUF,
plain or with its own prompt-lookup draft (llama-cpp-python's
``LlamaPromptLookupDecoding``).

Every side answers ``run(prompts, max_tokens, eos)`` with, per prompt, the greedy tokens
up to and including the first end-of-sequence token, the seconds from the prompt's
start to the first token (prefill) and from the first token to the last (decode), and
how many times tokens arrived (the steps after the first token). The engine's
``run_together`` (`bench decode-streams`) submits the prompts at once and answers each
token's arrival clock instead.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The engine side's model, weights and speculative modes (bench decode and
    decode-streams)."""
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--quantization", default="int4", choices=["int8", "int4", "none"])
    parser.add_argument("--group-size", type=int, default=32, help="int4 group size")
    parser.add_argument(
        "--modes", default="off,ngram", help="engine speculative modes, comma-separated"
    )


def _timed_result(
    tokens: list[int], start: float, first: float, last: float, steps: int | None, cpu_s: float
) -> dict[str, Any]:
    return {
        "tokens": tokens,
        "prefill_s": first - start,
        "decode_s": last - first,
        "decode_cpu_s": cpu_s,
        "steps": steps,
    }


def _greedy(max_tokens: int, eos: list[int]) -> Any:
    """Greedy sampling of ``max_tokens``; no ``eos`` tokens: every one of them (the
    engine's end-of-sequence ignored, as the llama.cpp sides ignore it then)."""
    from engine import SamplingParams

    return SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=not eos)


class EngineDecodePeer:
    """Our engine (AsyncLLM, as the server runs it) with one speculative mode."""

    def __init__(self, threads: int, engine_kwargs: dict[str, Any]) -> None:
        import torch

        from engine import AsyncLLM

        torch.set_num_threads(threads)
        self.llm = AsyncLLM(**engine_kwargs)
        asyncio.run(self.llm.warmup())

    def prompt_ids(self, conversations: list[list[dict[str, str]]]) -> list[list[int]]:
        """Each conversation chat-templated into token ids, ready for the answer."""
        out = []
        for messages in conversations:
            enc = self.llm.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=True
            )
            out.append(list(enc["input_ids"] if hasattr(enc, "keys") else enc))
        return out

    def eos_ids(self) -> list[int]:
        return sorted(self.llm.engine.scheduler.eos_token_ids)

    def decode_bytes(self) -> int:
        """Weight bytes one step of the target model reads (its memory-bound floor)."""
        from engine import decode_weight_bytes

        return decode_weight_bytes(self.llm.engine.model)

    def run(self, prompts: list[list[int]], max_tokens: int, eos: list[int]) -> list[dict]:
        params = _greedy(max_tokens, eos)
        return [asyncio.run(self._one(p, params)) for p in prompts]

    def run_together(
        self, prompts: list[list[int]], max_tokens: int, eos: list[int]
    ) -> list[dict[str, Any]]:
        """The prompts submitted at once, as the server's concurrent sessions submit
        theirs: per prompt its tokens and the (wall, CPU) clock each token arrived at."""
        return asyncio.run(self._together(prompts, _greedy(max_tokens, eos)))

    async def _together(self, prompts: list[list[int]], params: Any) -> list[dict[str, Any]]:
        await self.llm.free_all()
        start = (time.perf_counter(), time.process_time())

        async def one(i: int, prompt: list[int]) -> dict[str, Any]:
            tokens: list[int] = []
            clocks: list[tuple[float, float]] = []
            async for delta in self.llm.stream(prompt, params, request_id=f"s{i}-{start[0]}"):
                now = (time.perf_counter(), time.process_time())
                tokens.extend(delta.token_ids)
                clocks.extend([now] * len(delta.token_ids))
            return {"tokens": tokens, "clocks": clocks, "start": start}

        return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))

    async def _one(self, prompt: list[int], params: Any) -> dict[str, Any]:
        await self.llm.free_all()  # a cold prefix cache, as llama.cpp's reset leaves it
        tokens: list[int] = []
        start = time.perf_counter()
        first = last = start
        cpu_first = cpu_last = time.process_time()
        steps = 0
        async for delta in self.llm.stream(prompt, params):
            if not delta.token_ids:
                continue
            last, cpu_last = time.perf_counter(), time.process_time()
            if not tokens:
                first, cpu_first = last, cpu_last
            else:
                steps += 1
            tokens.extend(delta.token_ids)
        return _timed_result(tokens, start, first, last, steps, cpu_last - cpu_first)

    def close(self) -> None:
        self.llm.close()


class LlamaCppDecodePeer:
    """llama.cpp (llama-cpp-python) on the GGUF; ``lookup`` > 0 gives it its own
    prompt-lookup draft of that many tokens (its ``generate`` verifies them)."""

    def __init__(self, path: str, threads: int, lookup: int, n_ctx: int = 1024) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        draft = LlamaPromptLookupDecoding(num_pred_tokens=lookup) if lookup else None
        self.llm = Llama(path, n_threads=threads, n_ctx=n_ctx, draft_model=draft, verbose=False)

    def run(self, prompts: list[list[int]], max_tokens: int, eos: list[int]) -> list[dict]:
        return [self._one(p, max_tokens, set(eos)) for p in prompts]

    def _one(self, prompt: list[int], max_tokens: int, eos: set[int]) -> dict[str, Any]:
        self.llm.reset()
        tokens: list[int] = []
        start = time.perf_counter()
        first = last = start
        cpu_first = cpu_last = time.process_time()
        for token in self.llm.generate(prompt, temp=0.0, reset=True):
            last, cpu_last = time.perf_counter(), time.process_time()
            if not tokens:
                first, cpu_first = last, cpu_last
            tokens.append(token)
            if token in eos or len(tokens) >= max_tokens:
                break
        # Its generator yields a verified draft's tokens one by one, so the evaluations
        # (its steps) are not seen from here: none is reported.
        return _timed_result(tokens, start, first, last, None, cpu_last - cpu_first)

    def close(self) -> None:
        self.llm.close()
