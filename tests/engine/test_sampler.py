"""The sampler row by row: one request's numbers never fail the rows batched with it."""

from __future__ import annotations

import pytest
import torch

from engine.sampler import Sampler
from engine.sampling_params import SamplingParams

VOCAB = 50


def batch_logits(rows: int) -> torch.Tensor:
    return torch.randn(rows, VOCAB, generator=torch.Generator().manual_seed(7))


@pytest.mark.parametrize("temperature", [1e-40, 5e-324, 1e-6])
def test_a_tiny_temperature_is_greedy_and_its_neighbours_still_sample(temperature: float) -> None:
    """Bug: temperature 1e-40 turned logits into inf and softmax into NaN; multinomial
    raised and the engine failed every request of the step."""
    logits = batch_logits(3)
    params = [
        SamplingParams(temperature=temperature),
        SamplingParams(temperature=1.0, seed=1),
        SamplingParams(temperature=0.0),
    ]
    generators = [None, torch.Generator().manual_seed(1), None]
    tokens = Sampler()(logits, params, generators)
    assert tokens[0] == int(logits[0].argmax()) and tokens[2] == int(logits[2].argmax())
    alone = Sampler()(logits[1:2], params[1:2], [torch.Generator().manual_seed(1)])
    assert tokens[1] == alone[0]  # the seeded row draws as it would alone


def test_a_row_with_infinite_logits_takes_its_argmax() -> None:
    logits = batch_logits(2)
    logits[0, 3] = float("inf")
    logits[0, 4] = float("nan")
    params = [SamplingParams(temperature=0.7), SamplingParams(temperature=0.7)]
    tokens = Sampler()(logits, params, [None, None])
    assert tokens[0] == 3
    assert 0 <= tokens[1] < VOCAB
