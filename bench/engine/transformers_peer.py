"""The transformers peer of `bench engine`: ``generate`` on the same model and prompts."""

from __future__ import annotations

import time
from typing import Any


def count_to_eos(tokens: list[int], eos: set[int]) -> int:
    """Generated tokens up to and including the first EOS."""
    for i, t in enumerate(tokens):
        if t in eos:
            return i + 1
    return len(tokens)


def _hf_generate(
    model: Any, tokenizer: Any, prompts: list[list[int]], max_tokens: int, ignore_eos: bool
) -> tuple[list[list[int]], float]:
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])  # left padding
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    extra = {"min_new_tokens": max_tokens} if ignore_eos else {}
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=max_tokens,
            do_sample=False,
            pad_token_id=pad,
            **extra,
        )
    return out[:, width:].tolist(), time.perf_counter() - start


class TransformersPeer:
    """The baseline: transformers ``generate`` on the same model, dtype and prompts."""

    def __init__(self, path: Any, dtype_name: str, ignore_eos: bool, eos: set[int]) -> None:
        import torch
        import transformers

        from engine import transformers_kwargs

        dtype = torch.float32 if dtype_name == "float32" else torch.bfloat16
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path), dtype=dtype, **transformers_kwargs(path)
        )
        self.model.eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
        self.ignore_eos = ignore_eos
        self.eos = set() if ignore_eos else eos

    def warmup(self, prompt: list[int]) -> None:
        _hf_generate(self.model, self.tokenizer, [prompt], 4, False)

    def single(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        outs, seconds = [], 0.0
        for p in prompts:
            toks, dt = _hf_generate(self.model, self.tokenizer, [p], max_tokens, self.ignore_eos)
            outs.append(toks[0][: count_to_eos(toks[0], self.eos)])
            seconds += dt
        n = sum(len(t) for t in outs)
        return {
            "output_tokens": n,
            "seconds": round(seconds, 3),
            "tokens_per_s": round(n / seconds, 2),
            "tokens": outs,
        }

    def static_batch(self, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
        toks, seconds = _hf_generate(
            self.model, self.tokenizer, prompts, max_tokens, self.ignore_eos
        )
        n = sum(count_to_eos(t, self.eos) for t in toks)
        return {
            "batch_size": len(prompts),
            "output_tokens": n,
            "seconds": round(seconds, 3),
            "tokens_per_s": round(n / seconds, 2),
        }
