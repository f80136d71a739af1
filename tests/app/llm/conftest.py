"""Fixtures of the LLM-layer tests: the bundled SmolLM2 and its tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.loading.model_store import bundled_llm_dir, is_complete

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    path = bundled_llm_dir(MODEL)
    if not is_complete(path):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    return path


@pytest.fixture
def tokenizer(smollm2_path: Path) -> Any:
    """A fresh tokenizer (tests may change its chat template)."""
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(smollm2_path))


def chat_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """The prompt ids as transformers itself builds them (the reference)."""
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return [int(t) for t in (ids["input_ids"] if hasattr(ids, "keys") else ids)]
