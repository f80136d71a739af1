"""`r1voice bench engine --long-call-only` at a small size: the report is well formed
and says what the trim does (the turns after the low-water trim are served from the
prefix cache, those after the oldest-turn trim are not). Times are the bench's report
(RELIABILITY.md, "Long calls"), never asserted here."""

from __future__ import annotations

import pytest

from app.cli import build_parser
from bench.engine import engine
from engine.loading.model_store import bundled_llm_dir, is_complete


@pytest.mark.timeout(600)
def test_long_call_report() -> None:
    if not is_complete(bundled_llm_dir("smollm2-135m-instruct")):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    args = build_parser().parse_args(
        ["bench", "engine", "--quick", "--long-call-only", "--long-context", "512",
         "--long-turns", "6", "--long-turn-tokens", "96", "--long-answer-tokens", "8",
         "--long-prefill-tokens", "600"]
    )  # fmt: skip
    report = engine.run(args)["long_call"]
    assert report["context_tokens"] == 512 and report["machine"]["cpu_flags"]
    runs = report["runs"]
    assert set(runs) == {"low_water_trim", "oldest_turn_trim"}
    for run in runs.values():
        assert [t["turn"] for t in run["turns"]] == list(range(6))
        assert run["first_trim_turn"] is not None  # the call went past the context
        assert run["median_turn_s_after_trim"] > 0 and run["after_over_before"] > 0
        assert all(t["prompt_tokens"] <= 512 - 8 for t in run["turns"])
    assert runs["low_water_trim"]["cached_share_after_trim"] > 0.4
    assert runs["oldest_turn_trim"]["cached_share_after_trim"] < 0.2
    prefill = report["long_prefill"]
    assert prefill["prompt_tokens"] == 511 and prefill["ratio"] > 0


@pytest.mark.timeout(600)
def test_long_prefill_report_per_attention_mode() -> None:
    """`--long-prefill-only`: one engine per --attention-bf16 mode, each with what the
    mode resolved to on this machine, and a bad mode refused with the valid ones."""
    from engine.errors import ConfigError
    from engine.kernels.cpu_kernels import CpuKernels, cpu_flags

    if not is_complete(bundled_llm_dir("smollm2-135m-instruct")):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    args = build_parser().parse_args(
        ["bench", "engine", "--quick", "--long-prefill-only", "--long-prefill-tokens", "600",
         "--attention-bf16", "none,auto"]
    )  # fmt: skip
    report = engine.run(args)["long_prefill"]
    assert report["prompt_tokens"] == 600 and report["machine"]["cpu_flags"]
    assert set(report["modes"]) == {"none", "auto"}
    assert report["modes"]["none"]["bf16_mask"] == 0
    ops = CpuKernels.lib()
    has_bf16 = ops is not None and "avx512_bf16" in cpu_flags()
    tiles = 4 if has_bf16 and ops.amx_bf16_ready() else 0  # on AMX-BF16 tiles
    assert report["modes"]["auto"]["bf16_mask"] == (3 | tiles if has_bf16 else 0)  # q.k and p.V
    for row in report["modes"].values():
        assert row["ratio"] > 0 and len(row["runs_s"]["long"]) == 1
    args.attention_bf16 = "half"
    with pytest.raises(ConfigError, match="attention_bf16 must be one of"):
        engine.run(args)
