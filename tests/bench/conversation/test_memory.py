"""`r1voice bench conversation --memory-only`: the script's shape, the CLI's wiring, and a
short run's JSON with the bundled SmolLM2 (its context overflows in both modes). What the
model recalls is the bench's report, never asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import build_parser, main
from bench.conversation import memory


def test_the_script_states_the_facts_first_and_asks_for_them_last() -> None:
    turns = memory.script(80)
    assert len(turns) == 80
    assert turns[:3] == [fact[1] for fact in memory.FACTS]
    assert turns[-3:] == [fact[2] for fact in memory.FACTS]
    assert not any(fact[3] in text for text in turns[3:-3] for fact in memory.FACTS)
    with pytest.raises(SystemExit):
        memory.script(5)


def test_the_cli_runs_it_as_bench_conversation() -> None:
    args = build_parser().parse_args(["bench", "conversation", "--memory-only", "--quick"])
    assert (args.what, args.memory_only, args.quick, args.modes) == (
        "conversation",
        True,
        True,
        "summarize,drop",
    )


def test_a_short_run_overflows_in_both_modes(tmp_path: Path) -> None:
    from engine.loading.model_store import bundled_llm_dir, is_complete

    name = "smollm2-135m-instruct"
    if not is_complete(bundled_llm_dir(name)):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    out = tmp_path / "memory.json"
    argv = ["bench", "conversation", "--memory-only", "--models", name, "--turns", "10"]
    assert main([*argv, "--context", "420", "--max-tokens", "16", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["turns"], result["context_tokens"]) == (10, 420)
    runs = {run["history"]: run for run in result["runs"]}
    assert set(runs) == {"summarize", "drop"}
    for run in runs.values():
        assert run["deleted"] > 0 and set(run["answers"]) == {"name", "city", "number"}
    assert runs["drop"]["summaries"] == 0
    assert runs["summarize"]["summaries"] + runs["summarize"]["errors"] > 0
