"""A live server for emulated boards (a real socket: boards stream at real-time pace)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import app_with, run_live


@pytest.fixture(scope="module")
def device_server(shared_components: Any) -> Iterator[str]:
    """The server as a device finds it: its default xiaozhi pipeline (whisper-base with
    the language detected, Qwen2.5-Coder, the voice of the answer's language)."""
    yield from run_live(app_with(shared_components))
