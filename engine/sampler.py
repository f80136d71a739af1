"""Sampler: logits -> next tokens (greedy, temperature, top-k, top-p, seeded)."""

from __future__ import annotations

import torch

from engine.kernels.cpu_kernels import CpuKernels
from engine.sampling_params import SamplingParams


class Sampler:
    """Samples one token per row.

    An all-greedy batch is one argmax. Other rows are sampled one by one with their own
    generator so that a seeded request draws the same tokens whatever it is batched with.
    A row whose distribution is not finite (overflowing logits) takes its argmax: one
    request's numbers never fail the rows batched with it.
    """

    def __init__(self, seed: int = 0) -> None:
        self.default_generator = torch.Generator().manual_seed(seed)

    def __call__(
        self,
        logits: torch.Tensor,
        params: list[SamplingParams],
        generators: list[torch.Generator | None],
    ) -> list[int]:
        logits = logits.float()
        if logits.device.type == "cpu" and CpuKernels.k is not None:
            tokens = CpuKernels.k.argmax_rows(logits).tolist()  # torch's, vectorized
        else:
            tokens = logits.argmax(dim=-1).tolist()
        for i, p in enumerate(params):
            if not p.greedy:
                tokens[i] = self._sample_row(logits[i], p, generators[i])
        return tokens

    def _sample_row(
        self, logits: torch.Tensor, p: SamplingParams, generator: torch.Generator | None
    ) -> int:
        logits = logits.cpu() / p.temperature  # sample on CPU: generators are CPU ones
        if 0 < p.top_k < logits.shape[-1]:
            kth = torch.topk(logits, p.top_k).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if p.top_p < 1.0:
            sorted_logits, order = logits.sort(descending=True)
            probs = sorted_logits.softmax(-1)
            # Drop a token when the tokens before it already reach top_p (keep >= 1).
            drop = probs.cumsum(-1) - probs > p.top_p
            logits = logits.scatter(0, order[drop], float("-inf"))
        probs = logits.softmax(-1)
        if not bool(torch.isfinite(probs).all()) or float(probs.sum()) <= 0.0:
            return int(torch.nan_to_num(logits, nan=float("-inf")).argmax().item())
        gen = generator if generator is not None else self.default_generator
        return int(torch.multinomial(probs, 1, generator=gen).item())
