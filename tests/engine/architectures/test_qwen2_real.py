"""Real Qwen2 weights (the bundled Qwen2.5-Coder-0.5B-Instruct, the architecture of
DeepSeek-R1-Distill-Qwen): greedy tokens identical to transformers, token for token, at
batch 1 and 16, with chunked prefill and with prefix-cache hits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from engine import LLM, SamplingParams
from engine.kernels.cpu_kernels import BF16_SCORES, BF16_VALUES, CpuKernels, cpu_flags
from engine.loading.model_store import bundled_llm_dir, is_complete

MODEL = "qwen2.5-coder-0.5b-instruct"
# A 0.5B model in fp32, twice (transformers and ours): minutes on 2 shared cores.
pytestmark = pytest.mark.timeout(1800)
MAX_NEW = 8
SYSTEM = "You are a helpful voice assistant. Answer briefly."
QUESTIONS = [
    "What is the capital of France?",
    "How many minutes are in three hours?",
    "Explain photosynthesis in one sentence.",
    "What is the boiling point of water in Fahrenheit?",
    "Give me a tip for sleeping better.",
    "中国的首都是哪里？",
    "用一句话介绍长城。",
    "三加五等于多少？",
    "请推荐一本好书。",
    "Write a Python function that returns the square of a number.",
    "What does `git rebase -i HEAD~3` do?",
    "def fib(n):\n    # complete this function",
    "Translate 'good morning' into Chinese.",
    "Summarise the rules of chess in one sentence.",
    "你好！今天天气怎么样？",
]
# A long multi-turn conversation: the template's system, user and assistant turns.
HISTORY = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "My name is Lin and I live in Hangzhou. I like tea."},
    {"role": "assistant", "content": "Nice to meet you, Lin! Hangzhou is famous for Longjing tea."},
    {"role": "user", "content": "Can you remind me what a binary search does? " * 6},
    {
        "role": "assistant",
        "content": "Binary search finds an item in a sorted list by halving the range "
        "it searches each step, so it takes about log2(n) comparisons. " * 3,
    },
    {"role": "user", "content": "我明天要去上海出差，需要带什么？"},
    {"role": "assistant", "content": "带上身份证、充电器、换洗衣服和雨伞。上海最近经常下雨。"},
]


EOS = {151643, 151645}  # <|endoftext|>, <|im_end|>


def until_eos(tokens: list[int]) -> list[int]:
    """The tokens up to and including the first end of text (both sides stop there)."""
    for i, token in enumerate(tokens):
        if token in EOS:
            return tokens[: i + 1]
    return tokens


def hf_greedy(model: Any, prompt: list[int]) -> list[int]:
    """transformers' greedy decoding, stopping at the model's end of text."""
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=MAX_NEW,
            do_sample=False,
            pad_token_id=151643,
        )
    return until_eos(out[0, len(prompt) :].tolist())


def chat(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.fixture(scope="module")
def qwen_dir() -> Path:
    path = bundled_llm_dir(MODEL)
    if not is_complete(path):
        pytest.skip(f"the bundled {MODEL} is not prepared (r1voice models prepare {MODEL})")
    return path


@pytest.fixture(scope="module")
def cases(qwen_dir: Path) -> tuple[list[list[int]], list[list[int]]]:
    """16 prompts (15 questions + the long conversation) and transformers' greedy tokens."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(qwen_dir))
    prompts = [
        chat(tokenizer, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}])
        for q in QUESTIONS
    ]
    prompts.append(chat(tokenizer, [*HISTORY, {"role": "user", "content": "我叫什么名字？"}]))
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(qwen_dir), dtype=torch.float32)
    expected = [hf_greedy(hf, p) for p in prompts]
    return prompts, expected


PARAMS = SamplingParams(max_tokens=MAX_NEW, temperature=0.0, ignore_eos=True)


def _free(llm: LLM) -> bool:
    stats = llm.stats()
    return stats.kv_blocks_free == stats.kv_blocks_total


def test_batch_of_16_and_each_alone(cases: tuple[list[list[int]], list[list[int]]]) -> None:
    prompts, expected = cases
    assert len(prompts) == 16 and max(map(len, prompts)) > 250
    llm = LLM(MODEL, dtype="float32", quantization="none", enable_prefix_caching=False)
    batch = llm.generate(prompts, PARAMS)
    assert [until_eos(o.token_ids) for o in batch] == expected
    alone = [until_eos(llm.generate([p], PARAMS)[0].token_ids) for p in prompts]
    assert alone == expected
    assert _free(llm)


def test_chunked_prefill_and_prefix_cache_hits(
    cases: tuple[list[list[int]], list[list[int]]],
) -> None:
    prompts, expected = cases
    # Prefill in chunks of 64 tokens beside running decodes; blocks of 16 cached by prefix.
    llm = LLM(MODEL, dtype="float32", quantization="none", max_num_batched_tokens=64)
    first = llm.generate(prompts, PARAMS)
    assert [until_eos(o.token_ids) for o in first] == expected
    again = llm.generate(prompts[::-1], PARAMS)[::-1]  # every prompt's full blocks cached now
    assert [until_eos(o.token_ids) for o in again] == expected
    long_prompt = again[-1]
    assert long_prompt.num_cached_tokens >= len(prompts[-1]) // 16 * 16 - 16
    assert _free(llm)


@pytest.mark.skipif(
    CpuKernels.lib() is None or "avx512_bf16" not in cpu_flags(),
    reason="needs the kernels and AVX512_BF16",
)
def test_bf16_attention_keeps_qwen2s_perplexity(qwen_dir: Path) -> None:
    """bf16 q.k (the default for int8 weights) costs Qwen2 no measurable perplexity:
    the kernel rounds the keys less the sequence's first key, not their large common
    bias (rounded as they were, the keys cost +4.6% on these 512 tokens)."""
    from engine.loading.scoring import perplexity

    text = (Path(__file__).parents[2] / "data" / "eval_text.txt").read_text()
    exact = LLM(str(qwen_dir), quantization="int8", attention_bf16="none")
    ids = exact.tokenizer.encode(text)[:512]
    ppl = {"none": perplexity(exact, ids)}
    exact.close()
    auto = LLM(str(qwen_dir), quantization="int8")
    both = BF16_SCORES | BF16_VALUES
    assert auto.model_runner.attention_bf16 & both == both  # "all", or "amx" (the tiles)
    ppl["auto"] = perplexity(auto, ids)
    auto.close()
    assert ppl["auto"] != ppl["none"], ppl  # the rounding is real
    assert ppl["auto"] <= ppl["none"] * 1.003, ppl
