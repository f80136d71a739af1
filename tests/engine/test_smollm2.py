"""The bundled SmolLM2-135M-Instruct: exact against transformers; text, stops, UTF-8."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from engine import LLM, SamplingParams
from engine.detokenizer import IncrementalDetokenizer

QUESTIONS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Hi! How are you today?",
]
MAX_NEW = 24


@pytest.fixture(scope="module")
def llm(smollm2_dir: Path) -> LLM:
    return LLM("smollm2-135m-instruct", quantization="none")


def chat(tokenizer: Any, question: str) -> list[int]:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_model_path_and_tokenizer(llm: LLM, smollm2_dir: Path) -> None:
    assert llm.model_path == smollm2_dir
    assert llm.tokenizer is not None and 2 in llm.scheduler.eos_token_ids


def test_greedy_matches_transformers(llm: LLM, smollm2_dir: Path) -> None:
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(smollm2_dir), dtype=torch.float32)
    prompts = [chat(llm.tokenizer, q) for q in QUESTIONS]
    expected = []
    with torch.no_grad():
        for p in prompts:
            out = hf.generate(
                torch.tensor([p]),
                attention_mask=torch.ones(1, len(p), dtype=torch.long),
                max_new_tokens=MAX_NEW,
                do_sample=False,
            )
            expected.append(out[0, len(p) :].tolist())
    outs = llm.generate(prompts, SamplingParams(max_tokens=MAX_NEW, temperature=0.0))
    assert [o.token_ids for o in outs] == expected
    for out in outs:
        assert out.text == llm.tokenizer.decode(out.token_ids, skip_special_tokens=True)


def test_stop_string_ends_and_is_not_in_text(llm: LLM) -> None:
    prompt = chat(llm.tokenizer, QUESTIONS[0])
    full = llm.generate([prompt], SamplingParams(max_tokens=MAX_NEW, temperature=0.0))[0]
    assert "Paris" in full.text
    cut = llm.generate(
        [prompt], SamplingParams(max_tokens=MAX_NEW, temperature=0.0, stop=["Paris"])
    )[0]
    assert cut.finish_reason == "stop"
    assert cut.text == full.text[: full.text.index("Paris")]


def test_string_prompt(llm: LLM) -> None:
    out = llm.generate("The capital of France is", SamplingParams(max_tokens=4, temperature=0))
    assert len(out) == 1 and out[0].text


def test_incremental_detokenizer_never_splits_characters(llm: LLM) -> None:
    text = "héllo 你好世界 🎉🎉 naïve — ok"
    ids = llm.tokenizer.encode(text, add_special_tokens=False)
    detok = IncrementalDetokenizer(llm.tokenizer, [])
    deltas = [detok.add(t) for t in ids]
    assert all("\ufffd" not in d for d in deltas)
    assert "".join(deltas) == text


def test_stream_holds_back_stop_strings_and_whole_characters(smollm2_dir: Path) -> None:
    import asyncio

    from engine import AsyncLLM

    allm = AsyncLLM("smollm2-135m-instruct", quantization="none")
    prompt = chat(allm.tokenizer, QUESTIONS[0])

    async def main() -> tuple[list[str], str | None]:
        deltas, reason = [], None
        params = SamplingParams(max_tokens=MAX_NEW, temperature=0.0, stop=["Paris"])
        async for delta in allm.stream(prompt, params):
            deltas.append(delta.text)
            reason = delta.finish_reason
        return deltas, reason

    try:
        deltas, reason = asyncio.run(main())
    finally:
        allm.close()
    assert reason == "stop"
    text = "".join(deltas)
    assert text == "The capital of France is "
    assert all("\ufffd" not in d for d in deltas)
