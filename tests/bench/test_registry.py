"""bench/registry.py: a name gives its bench's module, imported only then; an unknown name
is refused with the names there are."""

from __future__ import annotations

import pytest

from bench import registry


def test_a_name_loads_its_module() -> None:
    module = registry.load("soak")
    assert module.__name__ == registry.BENCHES["soak"].module == "bench.reliability.soak"
    assert callable(module.run) and callable(module.add_arguments)


def test_an_unknown_name_is_refused_with_the_names() -> None:
    with pytest.raises(ValueError, match="no bench named 'nope': choose one of engine, voice"):
        registry.load("nope")


def test_the_seventeen_commands_are_kept() -> None:
    assert list(registry.BENCHES) == [
        "engine", "voice", "tracing", "decode", "decode-streams", "cold-start", "quant", "serve", "prefix", "load", "soak",
        "turns",
        "asr", "answers", "capacity", "conversation", "tools",
    ]  # fmt: skip
