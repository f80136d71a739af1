"""Fixtures of the engine tests: tiny models (session scope) and the bundled SmolLM2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.loading.model_store import bundled_llm_dir, is_complete
from tests.engine.tiny_models import TINY_SHAPES, build_tiny


@pytest.fixture(scope="session")
def tiny_factory(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple[Path, Any]]:
    """Build (and cache per name) a tiny model: factory(name, **overrides)."""
    cache: dict[str, tuple[Path, Any]] = {}

    def make(name: str = "llama-gqa-tied", **overrides: Any) -> tuple[Path, Any]:
        key = name + repr(sorted(overrides.items()))
        if key not in cache:
            spec = {**TINY_SHAPES[name], **overrides}
            cache[key] = build_tiny(tmp_path_factory.mktemp(name), **spec)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def tiny_llama(tiny_factory: Callable[..., tuple[Path, Any]]) -> Path:
    return tiny_factory("llama-gqa-tied")[0]


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    path = bundled_llm_dir("smollm2-135m-instruct")
    if not is_complete(path):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    return path
