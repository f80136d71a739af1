"""Batch invariance (EngineConfig.batch_invariant): a prompt's logits, and so its greedy
tokens, are bit-identical whatever it is batched with, however its prefill is chunked,
and whatever the prefix cache holds (blocks a decode wrote included), at int8 as at
none. Randomized: requests join at random steps, in random order, under random step
budgets and a small KV pool; each is compared with the same prompt run alone."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from engine import LLM, SamplingParams
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.kernel_choice import KernelChoice, ShapeChoice, amx_ready
from engine.loading import quantized_model
from engine.sampler import Sampler

pytestmark = pytest.mark.skipif(
    CpuKernels.ops() is None, reason="the guarantee holds on the C++ CPU kernels (AVX-512)"
)

MAX_NEW = 16
QUESTIONS = [
    "What is the capital of France?",
    "Explain photosynthesis in detail. " * 3,
    "Write a short poem about the sea.",
    "Tell me a story about a dragon and a knight. " * 6,
    "How do I bake bread at home?",
    "List ten animals and describe each one. " * 4,
    "Why is the sky blue?",
]


class RecordingSampler(Sampler):
    """The engine's sampler, keeping every row of logits it sees, per request (a request
    is known by its own SamplingParams object)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[int, list[torch.Tensor]] = {}

    def __call__(
        self, logits: torch.Tensor, params: list[SamplingParams], generators: list[Any]
    ) -> list[int]:
        for row, p in zip(logits, params, strict=True):
            self.rows.setdefault(id(p), []).append(row.float().clone())
        return super().__call__(logits, params, generators)


def recorded(llm: LLM) -> RecordingSampler:
    sampler = RecordingSampler()
    llm.model_runner.sampler = sampler
    return sampler


def run(
    llm: LLM, sampler: RecordingSampler, prompts: list[list[int]], rng: random.Random | None
) -> list[tuple[list[int], list[torch.Tensor]]]:
    """Run `prompts` to the end; with `rng`, each joins at a random step. Returns each
    prompt's (tokens, logits rows)."""
    params = [SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True) for _ in prompts]
    pending = list(range(len(prompts)))
    seqs: dict[int, Any] = {}
    while pending or llm.has_unfinished():
        joining = pending if rng is None else pending[: rng.randint(0, 2)] or pending[:0]
        if rng is not None and not llm.has_unfinished() and not joining:
            joining = pending[:1]  # never spin on an empty engine
        for i in joining:
            seqs[i] = llm.add_request(prompts[i], params[i], backpressure=False)
        pending = [i for i in pending if i not in seqs]
        llm.step()
    return [
        (seqs[i].completion_token_ids, sampler.rows.pop(id(params[i]))) for i in range(len(prompts))
    ]


def chat(tokenizer: Any, turns: list[str]) -> list[int]:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def workload(model_dir: Path, alone: LLM, sampler: RecordingSampler) -> list[list[int]]:
    """The questions, and follow-ups whose prompts hold an earlier answer: in a cached
    run their prefix blocks were written by decode steps, alone by a prefill."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    prompts = [chat(tokenizer, [q]) for q in QUESTIONS]
    for q in QUESTIONS[:3]:
        first = chat(tokenizer, [q])
        ((answer, _rows),) = run(alone, sampler, [first], None)
        prompts.append(first + answer + chat(tokenizer, ["Say that again, shorter."])[1:])
    return prompts


def check_invariant(
    model_dir: Path,
    quantization: str,
    trials: int,
    seed: int,
    then: Callable[[], None] = lambda: None,
) -> None:
    """``then`` runs after the prompts ran alone, before the trials' engines load."""
    base = dict(quantization=quantization, max_step_ms=None)
    alone = LLM(str(model_dir), enable_prefix_caching=False, int8_kernel="vnni", **base)
    sampler = recorded(alone)
    prompts = workload(model_dir, alone, sampler)
    expected = [run(alone, sampler, [p], None)[0] for p in prompts]
    then()
    rng = random.Random(seed)
    for _ in range(trials):
        chunk = rng.choice([16, 23, 40, 64, 97])
        longest = max(map(len, prompts)) + MAX_NEW
        llm = LLM(
            str(model_dir),
            enable_prefix_caching=True,
            max_num_batched_tokens=chunk,
            max_num_seqs=min(chunk, 8),
            num_kv_blocks=-(-longest // 16) + rng.choice([2, 8, 40]),  # pressure: preemptions
            **base,
        )
        trial_sampler = recorded(llm)
        order = list(range(len(prompts)))
        rng.shuffle(order)
        order += rng.sample(order, 3)  # again, from the cache this time
        got = run(llm, trial_sampler, [prompts[i] for i in order], rng)
        for i, (tokens, rows) in zip(order, got, strict=True):
            want_tokens, want_rows = expected[i]
            where = f"prompt {i} (chunk {chunk}, {llm.stats().num_preemptions} preemptions)"
            assert tokens == want_tokens, where
            assert all(torch.equal(a, b) for a, b in zip(rows, want_rows, strict=True)), where
        assert llm.stats().kv_blocks_free == llm.stats().kv_blocks_total
        llm.close()
    alone.close()


def test_int8_logits_do_not_depend_on_batch_chunks_or_cache(smollm2_dir: Path) -> None:
    check_invariant(smollm2_dir, "int8", trials=3, seed=1)


def test_int8_logits_do_not_depend_on_the_path_a_batchs_size_took(
    smollm2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KernelChoice picks a path by row count; with torch's path for 9-64 rows (and the
    AMX kernel for 4-8 and 65+ where the CPU has tiles), steps of 16-97 tokens cross the
    classes, and every logit keeps our kernel's bits alone."""

    chosen: list[int] = []
    mix = ("vnni", "amx", "int_mm", "amx") if amx_ready() else ("vnni", "vnni", "int_mm", "vnni")

    class Mixed(KernelChoice):
        def choose(self, shapes: Iterable[tuple[int, int]]) -> dict[Any, ShapeChoice]:
            chosen.append(1)
            return {s: ShapeChoice(mix, ({},) * 4) for s in shapes}

    def mixed() -> None:
        monkeypatch.setattr(quantized_model, "KernelChoice", Mixed)

    check_invariant(smollm2_dir, "int8", trials=1, seed=3, then=mixed)
    assert chosen  # the trial's engine took the mix


def test_none_logits_do_not_depend_on_batch_chunks_or_cache(smollm2_dir: Path) -> None:
    check_invariant(smollm2_dir, "none", trials=1, seed=2)


def test_off_the_guarantee_chunking_changes_logits(smollm2_dir: Path) -> None:
    """The check above can fail: with batch_invariant off, torch's attention over chunks
    rounds differently from one pass (what the guarantee fixes)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(smollm2_dir))
    prompt = chat(tokenizer, [QUESTIONS[3]])
    rows = []
    for chunk in (2048, 23):
        llm = LLM(
            str(smollm2_dir),
            batch_invariant=False,
            max_step_ms=None,
            max_num_batched_tokens=chunk,
            max_num_seqs=8,
        )
        sampler = recorded(llm)
        rows.append(run(llm, sampler, [prompt], None)[0][1][0])
        llm.close()
    assert not torch.equal(rows[0], rows[1])
