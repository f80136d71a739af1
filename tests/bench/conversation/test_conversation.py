"""`r1voice bench conversation` at a small size: its sounds are what each part claims, its
counts add up, and a run of one trial a part against a real `r1voice serve` gives
well-formed results. What went right and the times are the bench's report, never
asserted here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.cli import build_parser
from bench.conversation import conversation
from bench.conversation.noises import KINDS, make
from bench.conversation.report import GOOD, decision_summary, summarize_part, table
from bench.conversation.sounds import BACKCHANNELS_ZH, non_speech, overlaps


def test_non_speech_is_seeded_short_and_of_every_kind() -> None:
    sounds = non_speech(len(KINDS), seed=3)
    assert [s.voice for s in sounds] == list(KINDS)
    for sound in sounds:
        assert sound.part == "false" and sound.text == ""
        assert sound.samples.dtype == np.float32 and 0.2 < sound.duration_s < 2.0
        assert np.abs(sound.samples).max() < 1.0
    assert np.array_equal(make("cough", 7), make("cough", 7))
    assert not np.array_equal(make("cough", 7)[:1000], make("cough", 8)[:1000])


def test_a_short_run_has_each_voice_and_the_mandarin_backchannels_are_heard_as_mandarin() -> None:
    said = overlaps("backchannel", 20, seed=0)
    assert [o.voice for o in said[:3]] == ["piper", "espeak", "cmn"]
    mandarin = [o for o in said if o.voice == "cmn"]
    assert sorted(o.text for o in mandarin) == sorted(BACKCHANNELS_ZH)
    assert all(o.language == "zh" for o in mandarin)
    assert all(o.samples.size > PROTOCOL_RATE // 10 for o in said)
    stops = overlaps("interruption", 4, seed=0)
    assert [o.voice for o in stops] == ["piper", "espeak", "piper", "espeak"]


def _trial(voice: str, status: str, whole: bool, paused: bool = True) -> dict[str, Any]:
    verdicts = ["wait", "interrupt" if status == "cancelled" else "backchannel"] if paused else []
    return {
        "overlap": f"{voice}: x",
        "voice": voice,
        "language": "zh" if voice == "cmn" else "en",
        "overlapped": True,
        "status": status,
        "whole": whole,
        "paused": paused,
        "verdicts": verdicts,
        "heard": "x",
        "stop_ms": 320.0 if paused else None,
        "done_ms": 700.0,
        "decision_after_speech_end_ms": 400.0 if paused else None,
    }


def test_the_counts_add_up_against_the_target() -> None:
    trials = [_trial("piper", "completed", True) for _ in range(18)]
    trials += [_trial("espeak", "cancelled", False), _trial("espeak", "completed", True, False)]
    trials.append({"overlap": "cmn: 嗯", "voice": "cmn", "overlapped": False, "problem": "late"})
    s = summarize_part("backchannel", trials)
    assert (s["trials"], s["overlapped"], s["paused"], s["survived"]) == (21, 20, 19, 19)
    assert s["target"] == ">= 20/21" and not s["target_met"]
    assert s["by_voice"] == {"espeak": "1/2", "piper": "18/18"}
    assert s["verdicts"] == {"backchannel": 18, "interrupt": 1}
    assert len(s["wrong"]) == 1 and s["problems"] == ["cmn: 嗯: late"]
    stops = summarize_part("interruption", [_trial("piper", "cancelled", False)] * 4)
    assert stops["interrupted"] == 4 and stops["target_met"]
    assert stops["cancel_after_stop_ms"]["p50"] == 380.0
    decision = decision_summary([*trials, _trial("cmn", "completed", True)])
    assert decision["n"] == 20 and decision["p50_met"]
    assert {k: v["n"] for k, v in decision["by_language"].items()} == {"en": 19, "zh": 1}


def test_parts_are_chosen_by_name_and_an_unknown_one_is_refused_before_any_server() -> None:
    assert list(conversation.PARTS) == ["backchannel", "interruption", "false"]
    args = build_parser().parse_args(["bench", "conversation", "--parts", "false,memory"])
    with pytest.raises(SystemExit, match="memory"):
        conversation.run(args)


@pytest.mark.timeout(300)
def test_one_trial_a_part_against_a_real_server_gives_well_formed_results() -> None:
    args = build_parser().parse_args(
        ["bench", "conversation", "--quick", "--trials", "1", "--answer-tokens", "32"]
    )
    result = conversation.run(args)
    assert result["trials_per_part"] == 1 and result["machine"]["cpu_model"]
    assert list(result["parts"]) == ["backchannel", "interruption", "false"]
    for part, summary in result["parts"].items():
        details = result["details"][part]
        assert summary["trials"] == len(details) == 1, details
        assert not summary["problems"], summary
        good = summary[GOOD[part]]
        assert 0 <= good <= summary["overlapped"] <= 1
        assert details[0]["status"] in ("completed", "incomplete", "cancelled"), details
    assert result["server"]["exit_code"] == 0
    assert "decision after the speech's end" in table(result)
