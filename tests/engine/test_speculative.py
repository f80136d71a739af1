"""Speculative decoding (engine.speculator): greedy tokens are those of decoding without
it, token for token, whatever drafts come, whatever the batch, with preemption and
aborts, and every block comes back. Tiny random-weight models (torch's path here; the
C++ kernels' where the CPU has them), checked against transformers as well."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, AsyncLLM, ConfigError, EngineConfig, SamplingParams
from engine.kernels.cpu_kernels import CpuKernels
from engine.spec_prompt_lookup import PromptLookup
from engine.spec_state import MAX_REST, SpecState
from tests.engine.tiny_models import hf_greedy

MAX_NEW = 40
GREEDY = SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True)
SHAPES = ["llama-gqa-tied", "qwen2-gqa-bias"]


def prompts(seed: int = 1) -> list[list[int]]:
    """Random prompts, and prompts that repeat (their n-grams recur: drafts come)."""
    gen = torch.Generator().manual_seed(seed)
    rand = [torch.randint(2, 256, (n,), generator=gen).tolist() for n in (3, 17, 40, 9)]
    return [*rand, (rand[1] * 4)[:50], rand[0] * 10]


def tokens(llm: LLM, batch: list[list[int]], params: SamplingParams = GREEDY) -> list[list[int]]:
    return [o.token_ids for o in llm.generate(batch, params)]


def assert_pool_full(llm: LLM) -> None:
    stats = llm.stats()
    assert stats.kv_blocks_free == stats.kv_blocks_total


class Oracle:
    """Drafts the known continuation with every fifth token wrong: full acceptances,
    partial ones and rejections at every position of a draft, the KV of rejected
    drafts written and rolled back (block_size 4: drafts cross blocks)."""

    def __init__(self, expected: dict[tuple[int, ...], list[int]]) -> None:
        self.expected = expected
        self.calls = 0

    def propose(self, seq_tokens: list[int], k: int) -> list[int]:
        self.calls += 1
        for prompt, answer in self.expected.items():
            if tuple(seq_tokens[: len(prompt)]) == prompt:
                m = len(seq_tokens) - len(prompt)
                drafts = list(answer[m : m + k])
                return [(t + 1) % 256 if (m + j) % 5 == 3 else t for j, t in enumerate(drafts)]
        return []


@pytest.fixture
def oracle(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[tuple[int, ...], list[int]]], Oracle]:
    def install(expected: dict[tuple[int, ...], list[int]]) -> Oracle:
        drafter = Oracle(expected)
        monkeypatch.setattr(PromptLookup, "propose", drafter.propose)
        return drafter

    return install


@pytest.mark.parametrize("shape", SHAPES)
def test_ngram_greedy_equals_decoding_and_transformers(
    tiny_factory: Callable[..., tuple[Path, Any]], shape: str
) -> None:
    path, hf = tiny_factory(shape)
    batch = prompts()
    expected = [hf_greedy(hf, p, MAX_NEW) for p in batch]
    plain = LLM(str(path), quantization="none")
    assert tokens(plain, batch) == expected
    llm = LLM(str(path), quantization="none", speculative="ngram", prompt_lookup_min=1)
    assert tokens(llm, batch) == expected
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_drafted > 0  # the repeating prompts drafted
    assert_pool_full(llm)


def test_ngram_drafts_are_accepted_where_the_answer_repeats(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    """This model's answer to this prompt repeats its own n-grams: real prompt-lookup
    drafts are accepted, and the tokens stay transformers' own."""
    path, hf = tiny_factory("qwen2-gqa-bias")
    prompt = prompts()[0]
    params = SamplingParams(max_tokens=100, temperature=0.0, ignore_eos=True)
    llm = LLM(str(path), quantization="none", speculative="ngram", prompt_lookup_min=1)
    assert tokens(llm, [prompt], params) == [hf_greedy(hf, prompt, 100)]
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_accepted > 0
    assert spec.num_verified < 100  # fewer steps than tokens... at least by the accepted
    stats = llm.stats()  # what /metrics gives as vLLM's spec_decode_num_* counters
    assert stats.spec_decode_num_drafts == spec.num_verified
    assert stats.spec_decode_num_draft_tokens == spec.num_drafted
    assert stats.spec_decode_num_accepted_tokens == spec.num_accepted
    assert_pool_full(llm)


@pytest.mark.parametrize("shape", SHAPES)
def test_accepted_rejected_and_rolled_back_drafts_keep_tokens_exact(
    tiny_factory: Callable[..., tuple[Path, Any]], oracle: Callable[..., Oracle], shape: str
) -> None:
    path, _ = tiny_factory(shape)
    batch = prompts(2)
    expected = tokens(LLM(str(path), quantization="none", block_size=4), batch)
    drafter = oracle({tuple(p): e for p, e in zip(batch, expected, strict=True)})
    llm = LLM(str(path), quantization="none", block_size=4, speculative="ngram")
    assert tokens(llm, batch) == expected
    spec = llm.scheduler.speculator
    assert spec is not None and drafter.calls > 0
    # Every fifth draft was wrong: most are accepted, not all.
    assert 0 < spec.num_accepted < spec.num_drafted
    assert spec.num_verified < len(batch) * MAX_NEW  # several tokens in some steps
    assert_pool_full(llm)


def test_batch_invariance_with_speculation(
    tiny_factory: Callable[..., tuple[Path, Any]], oracle: Callable[..., Oracle]
) -> None:
    """Requests joining at random steps under small step budgets give the tokens each
    gives alone without speculation."""
    path, _ = tiny_factory("llama-gqa-tied")
    batch = prompts(3)
    alone = LLM(str(path), quantization="none")
    expected = [tokens(alone, [p])[0] for p in batch]
    oracle({tuple(p): e for p, e in zip(batch, expected, strict=True)})
    rng = random.Random(4)
    for chunk in (16, 23, 64):
        llm = LLM(
            str(path),
            quantization="none",
            speculative="ngram",
            max_num_batched_tokens=chunk,
            max_num_seqs=8,
            block_size=4,
            max_step_ms=None,
        )
        order = list(range(len(batch)))
        rng.shuffle(order)
        seqs: dict[int, Any] = {}
        while len(seqs) < len(order) or llm.has_unfinished():
            for i in order[len(seqs) : len(seqs) + rng.randint(0, 2)]:
                seqs[i] = llm.add_request(batch[i], GREEDY)
            if not llm.has_unfinished() and len(seqs) < len(order):
                seqs[order[len(seqs)]] = llm.add_request(batch[order[len(seqs)]], GREEDY)
            llm.step()
        assert [seqs[i].completion_token_ids for i in range(len(batch))] == expected, chunk
        assert_pool_full(llm)


def test_preemption_with_speculation_keeps_tokens_exact(
    tiny_llama: Path, oracle: Callable[..., Oracle]
) -> None:
    batch = prompts(5)[:4]
    expected = tokens(LLM(str(tiny_llama), block_size=4, quantization="none"), batch)
    oracle({tuple(p): e for p, e in zip(batch, expected, strict=True)})
    tight = LLM(
        str(tiny_llama),
        block_size=4,
        quantization="none",
        num_kv_blocks=24,
        max_num_seqs=4,
        speculative="ngram",
    )
    assert tokens(tight, batch) == expected
    stats = tight.stats()
    assert stats.num_preemptions > 0
    spec = tight.scheduler.speculator
    assert spec is not None and spec.num_accepted > 0
    assert stats.kv_blocks_free == stats.kv_blocks_total == 24


def test_abort_mid_speculation_frees_blocks(
    tiny_llama: Path, oracle: Callable[..., Oracle], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request aborted while its drafts are being verified (its step running) and one
    aborted between speculative steps: every block comes back, the other runs on."""
    batch = prompts(6)[:3]
    expected = tokens(LLM(str(tiny_llama), block_size=4, quantization="none"), batch)
    oracle({tuple(p): e for p, e in zip(batch, expected, strict=True)})
    llm = LLM(str(tiny_llama), block_size=4, quantization="none", speculative="ngram")
    seqs = [llm.add_request(p, GREEDY) for p in batch]
    real_run = llm.model_runner.run
    aborted: list[str] = []

    def run_then_abort(sched_out: Any) -> Any:
        result = real_run(sched_out)
        if sched_out.drafts and not aborted:  # abort one that is verifying drafts
            victim = sched_out.seqs[next(iter(sched_out.drafts))]
            aborted.append(victim.request_id)
            llm.abort(victim.request_id)
        return result

    monkeypatch.setattr(llm.model_runner, "run", run_then_abort)
    while len(aborted) < 1:
        llm.step()
    survivor = next(s for s in seqs if s.request_id not in aborted)
    llm.step()
    llm.step()
    llm.abort(survivor.request_id)  # between steps, with drafts verified before
    assert survivor.spec is not None and survivor.spec.num_verified > 0
    while llm.has_unfinished():
        llm.step()
    for seq, want in zip(seqs, expected, strict=True):
        if seq.finish_reason != "abort":
            assert seq.completion_token_ids == want
        else:
            assert seq.completion_token_ids == want[: seq.num_completion_tokens]
    assert_pool_full(llm)


def test_sampled_and_stop_string_requests_do_not_speculate(tiny_llama: Path) -> None:
    """Temperature > 0 (seeded) and stop strings: the same tokens with speculation on,
    because those sequences decode one token a step."""
    batch = prompts()[4:]
    sampled = SamplingParams(max_tokens=MAX_NEW, temperature=0.8, seed=3, ignore_eos=True)
    plain = LLM(str(tiny_llama), quantization="none")
    llm = LLM(str(tiny_llama), quantization="none", speculative="ngram", prompt_lookup_min=1)
    assert tokens(llm, batch, sampled) == tokens(plain, batch, sampled)
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_drafted == 0
    assert not llm.scheduler.speculator.eligible(  # type: ignore[union-attr]
        llm.add_request([5, 6], SamplingParams(stop=["x"], temperature=0.0))
    )
    llm.free_all()


def test_speculation_steps_aside_for_a_large_batch(
    tiny_llama: Path, oracle: Callable[..., Oracle]
) -> None:
    batch = prompts(7)
    expected = tokens(LLM(str(tiny_llama), quantization="none"), batch)
    drafter = oracle({tuple(p): e for p, e in zip(batch, expected, strict=True)})
    small = len(batch) - 1  # the batch's decodes alone exceed it
    llm = LLM(
        str(tiny_llama),
        quantization="none",
        speculative="ngram",
        speculative_max_batch_tokens=small,
    )
    seqs = [llm.add_request(p, GREEDY) for p in batch]
    while all(s.num_completion_tokens < 5 for s in seqs):
        llm.step()
    assert drafter.calls == 0  # six sequences decoding: no room for drafts
    while llm.has_unfinished():
        llm.step()
    assert [s.completion_token_ids for s in seqs] == expected
    assert_pool_full(llm)


def test_prompt_lookup_proposes_the_latest_continuation() -> None:
    lookup = PromptLookup(1, 3)
    tokens_ = [1, 2, 3, 4, 9, 2, 3, 5, 7, 2, 3]
    assert lookup.propose(tokens_, 2) == [5, 7]  # "2 3" last seen before 5 7
    assert lookup.propose([*tokens_, 5], 3) == [7, 2, 3]  # "2 3 5" -> 7 2 3
    assert lookup.propose([*tokens_, 5, 8], 3) == []  # 8 never seen before
    assert lookup.propose(tokens_, 0) == []


def test_draft_length_adapts_to_acceptance() -> None:
    state = SpecState(PromptLookup(1, 2), max_k=8, k=2)
    state.record(drafted=2, accepted=2)
    assert state.k == 4
    state.record(drafted=4, accepted=4)
    assert state.k == 8
    state.record(drafted=8, accepted=8)
    assert state.k == 8  # capped
    state.record(drafted=8, accepted=2)
    assert state.k == 3
    state.record(drafted=3, accepted=0)
    assert state.k == 1
    assert state.acceptance == 16 / 25


def test_a_sequence_whose_drafts_keep_missing_sits_out_longer_each_time() -> None:
    """A whole miss rests the next step, two, four... (up to MAX_REST); a draft accepted
    again ends the backoff."""
    state = SpecState(PromptLookup(1, 2), max_k=8, k=2)
    assert not state.sits_out()
    rests = []
    for _ in range(7):
        state.record(drafted=1, accepted=0)
        n = 0
        while state.sits_out():
            n += 1
        rests.append(n)
    assert rests == [1, 2, 4, 8, 16, 16, 16] and MAX_REST == 16
    state.record(drafted=2, accepted=1)
    assert not state.sits_out()
    state.record(drafted=1, accepted=0)
    assert state.sits_out() and not state.sits_out()  # from one step again


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (dict(speculative="eagle"), "speculative must be one of"),
        (dict(speculative="ngram", num_speculative_tokens=0), "num_speculative_tokens"),
        (dict(speculative="ngram", num_speculative_tokens=17), "num_speculative_tokens"),
        (dict(speculative="ngram", prompt_lookup_min=3, prompt_lookup_max=2), "prompt_lookup"),
        (dict(speculative="ngram", prompt_lookup_min=0), "prompt_lookup_min"),
        (dict(speculative="ngram", speculative_max_batch_tokens=0), "speculative_max_batch"),
        (dict(speculative="draft"), "needs draft_model"),
        (dict(speculative="ngram", draft_model="x"), "draft_model is set"),
    ],
)
def test_bad_speculation_settings_are_refused_by_name(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        EngineConfig(model="unused", **fields)


@pytest.mark.parametrize("method", ["draft", "auto"])
def test_a_draft_model_with_the_targets_weights_is_always_accepted(
    tiny_factory: Callable[..., tuple[Path, Any]], method: str
) -> None:
    """A draft that is the target itself proposes the target's own tokens: every draft
    is accepted, which holds only if its KV (shared block tables, prompts and
    accepted drafts included) is complete and right."""
    path, hf = tiny_factory("qwen2-gqa-bias")
    batch = prompts(8)
    expected = [hf_greedy(hf, p, MAX_NEW) for p in batch]
    llm = LLM(
        str(path), quantization="none", block_size=4, speculative=method, draft_model=str(path)
    )
    assert tokens(llm, batch) == expected
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_drafted > len(batch)
    if method == "draft":
        assert spec.num_accepted == spec.num_drafted
    assert_pool_full(llm)


def test_a_drafting_step_runs_one_draft_pass_per_drafted_token(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    """Every decode step of one sequence drafts from the model: its passes write the KV
    of the drafts the target accepts, so no step syncs the draft again (the prompt's
    pass aside), and a step that took every draft leaves one row for the next pass."""
    path, hf = tiny_factory("qwen2-gqa-bias")
    prompt = prompts(8)[1]
    params = SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True)
    llm = LLM(
        str(path), quantization="none", block_size=4, speculative="draft", draft_model=str(path)
    )
    assert tokens(llm, [prompt], params) == [hf_greedy(hf, prompt, MAX_NEW)]
    spec, drafter = llm.scheduler.speculator, llm.drafter
    assert spec is not None and drafter is not None
    assert spec.num_accepted == spec.num_drafted > 2 * spec.num_verified
    # The prompt's pass, one per drafted token, and one for each step that drafted
    # nothing (the last tokens, with no room under max_tokens for a draft).
    plain_steps = MAX_NEW - 1 - spec.num_drafted - spec.num_verified
    assert drafter.num_passes == 1 + spec.num_drafted + plain_steps
    assert_pool_full(llm)


def test_another_draft_model_keeps_tokens_exact_under_preemption(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    target, hf = tiny_factory("llama-gqa-tied")
    draft, _ = tiny_factory("llama-gqa-tied", seed=5)  # other weights, the same vocabulary
    batch = prompts(9)[:4]
    expected = [hf_greedy(hf, p, MAX_NEW) for p in batch]
    llm = LLM(
        str(target),
        quantization="none",
        block_size=4,
        num_kv_blocks=24,
        max_num_seqs=4,
        speculative="draft",
        draft_model=str(draft),
    )
    assert tokens(llm, batch) == expected
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_drafted > 0
    stats = llm.stats()
    assert stats.num_preemptions > 0
    assert stats.kv_blocks_free == stats.kv_blocks_total == 24


def test_a_draft_of_another_vocabulary_is_refused_by_name(
    tiny_factory: Callable[..., tuple[Path, Any]],
) -> None:
    target, _ = tiny_factory("llama-gqa-tied")
    other, _ = tiny_factory("llama-gqa-tied", vocab_size=300)
    with pytest.raises(ConfigError, match=r"draft_model '.*' has a vocabulary different"):
        LLM(str(target), quantization="none", speculative="draft", draft_model=str(other))


READ_BACK = [
    "Book a table for four at Luigi's on Friday at seven thirty, name Alice Johnson.",
    "A table for four at Luigi's on Friday at seven thirty, for Alice Johnson. Right?",
    "Yes. Read the whole booking back to me exactly as I said it.",
]


@pytest.mark.skipif(
    CpuKernels.ops() is None, reason="batch invariance holds on the C++ CPU kernels (AVX-512)"
)
def test_smollm2_int8_prompt_lookup_is_exact_and_batch_invariant(smollm2_dir: Path) -> None:
    """A real model at int8, real prompt-lookup drafts of a conversation read back:
    the greedy tokens of each request, joining at random steps under small budgets,
    are those it gets alone without speculation."""
    alone = LLM(str(smollm2_dir), max_step_ms=None)
    tokenizer = alone.tokenizer
    roles = ["user", "assistant"]
    batch = []
    for turns in (READ_BACK, READ_BACK[:1], ["Say 'one two three' three times."]):
        messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        batch.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    params = SamplingParams(max_tokens=48, temperature=0.0)
    expected = [tokens(alone, [p], params)[0] for p in batch]
    llm = LLM(
        str(smollm2_dir),
        max_step_ms=None,
        speculative="ngram",
        max_num_batched_tokens=40,
        max_num_seqs=4,
    )
    rng = random.Random(5)
    seqs: list[Any] = []
    while len(seqs) < len(batch) or llm.has_unfinished():
        joining = rng.randint(0, 1) or not llm.has_unfinished()
        if joining and len(seqs) < len(batch):
            seqs.append(llm.add_request(batch[len(seqs)], params))
        llm.step()
    assert [s.completion_token_ids for s in seqs] == expected
    spec = llm.scheduler.speculator
    assert spec is not None and spec.num_accepted > 0
    assert_pool_full(llm)


@pytest.mark.skipif(
    CpuKernels.ops() is None, reason="batch invariance holds on the C++ CPU kernels (AVX-512)"
)
def test_streams_carry_every_accepted_token_and_the_same_text(smollm2_dir: Path) -> None:
    """Several tokens a step (drafts accepted) reach a stream whole: its deltas' tokens
    and text are those of decoding without speculation."""
    plain = LLM(str(smollm2_dir))
    messages = [{"role": "user", "content": " ".join(READ_BACK)}]
    ids = plain.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    prompt = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    params = SamplingParams(max_tokens=48, temperature=0.0)
    want = plain.generate([prompt], params)[0]
    allm = AsyncLLM(str(smollm2_dir), speculative="ngram")

    async def main() -> tuple[list[int], str, int]:
        got_tokens: list[int] = []
        text = ""
        deltas = 0
        async for delta in allm.stream(prompt, params, request_id="spec"):
            got_tokens += delta.token_ids
            text += delta.text
            deltas += 1
        return got_tokens, text, deltas

    try:
        got_tokens, text, deltas = asyncio.run(main())
        spec = allm.engine.scheduler.speculator
        assert spec is not None and spec.num_accepted > 0
    finally:
        allm.close()
    assert got_tokens == want.token_ids
    assert text == want.text
    assert deltas > 0
