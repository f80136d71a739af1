"""Fixtures of the realtime tests that need more than the shared components."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from app.catalog import registry
from app.llm.catalog import LLMCatalog

QWEN = "qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def with_qwen(shared_components: Any) -> Iterator[Any]:
    """The shared components with a catalog of their own, that really loads Qwen (once
    for this module; closed at its end)."""
    if QWEN not in [row.name for row in registry.list_models() if row.state == "ready"]:
        pytest.skip(f"{QWEN} is not prepared (r1voice models prepare {QWEN})")
    catalog = LLMCatalog.from_settings(shared_components.llm, shared_components.settings)
    yield dataclasses.replace(shared_components, llms=catalog)
    asyncio.run(catalog.close())
