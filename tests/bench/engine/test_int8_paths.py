"""`r1voice bench engine --int8-paths`: one engine per int8 path, the same tokens on
each, every mode's speeds and paths reported (times are the bench's, never asserted)."""

from __future__ import annotations

import pytest

from app.cli import build_parser
from bench.engine import engine
from engine.loading.model_store import bundled_llm_dir, is_complete


@pytest.mark.timeout(600)
def test_int8_paths_report() -> None:
    if not is_complete(bundled_llm_dir("smollm2-135m-instruct")):
        pytest.skip("the bundled SmolLM2 is not prepared (r1voice models prepare)")
    args = build_parser().parse_args(
        ["bench", "engine", "--quick", "--int8-paths", "vnni,int_mm,measure"]
    )
    report = engine.run(args)["int8_paths"]
    assert report["machine"]["cpu_flags"] and report["prefill_tokens"] == 128
    assert report["same_tokens"] is True  # the paths are bit-identical
    assert list(report["modes"]) == ["vnni", "int_mm", "measure"]
    vnni, int_mm = report["modes"]["vnni"], report["modes"]["int_mm"]
    assert vnni["prefill_vs_vnni"] == vnni["streams_vs_vnni"] == 1.0
    assert set(vnni["int8_paths"].values()) == {"vnni vnni vnni vnni"}
    assert any(p == "int_mm int_mm int_mm int_mm" for p in int_mm["int8_paths"].values())
    for row in report["modes"].values():
        assert row["prefill_tokens_per_s"] > 0 and row["streams_tokens_per_s"] > 0
