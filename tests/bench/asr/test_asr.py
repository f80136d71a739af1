"""`r1voice bench asr --quick`: every clip is transcribed once per window setting and
pause, and the report holds a WER and a time per setting. The figures are the bench's
report, never asserted here."""

from __future__ import annotations

from app.cli import build_parser
from bench.asr import asr


def test_quick_run_reports_each_window_over_the_same_passes() -> None:
    args = build_parser().parse_args(["bench", "asr", "--quick", "--min-window", "30,12"])
    result = asr.run(args)
    rows = result["windows"]
    assert list(rows) == ["min_window_30s", "min_window_12s"]
    clips = 2 + 4 + 4  # the human recordings, then 4 Piper and 4 espeak-ng clips
    for row in rows.values():
        assert row["passes"] == clips  # quick: one pause length
        assert 0.0 <= row["wer"] < 0.5  # every clip heard, not a loop or a blank
        assert row["ms_per_pass"] > 0


def test_an_unbundled_model_is_refused_by_name() -> None:
    import pytest

    from app.catalog.registry import ModelError

    args = build_parser().parse_args(["bench", "asr", "--quick", "--model", "whisper-huge"])
    with pytest.raises(ModelError, match="whisper-huge"):
        asr.run(args)


def test_long_quick_reports_both_languages_against_faster_whisper_alone() -> None:
    args = build_parser().parse_args(["bench", "asr", "--long", "--quick"])
    result = asr.run(args)
    assert result["mode"] == "long" and result["machine"]["cpu_count"]
    languages = result["languages"]
    assert list(languages) == ["en", "zh"]
    paths = {"server", "faster_whisper_beam5", "server_turns", "server_turns_no_context"}
    for language in languages.values():
        assert set(language["paths"]) == paths  # every quick clip is made of turns
        assert language["paths"]["server"]["clips"] == len(language["clips"])
        for clip in language["clips"]:
            assert clip["seconds"] > 30  # every turn outgrows Whisper's window
            assert clip["server"]["error_rate"] < 0.5  # heard, not a loop or a blank
            assert clip["server_turns"]["error_rate"] < 0.5
