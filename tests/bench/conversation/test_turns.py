"""`r1voice bench turns` at a small size: its utterances hold the pauses it claims, and a
quick run against a real `r1voice serve` ends every utterance's turn and every echoed
answer. Split shares and false barge-ins are the bench's report, never asserted here."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.cli import build_parser
from bench.conversation import turns
from bench.voice.workload import PAUSED_SENTENCES


def _pauses_s(samples: np.ndarray) -> list[float]:
    """Lengths of the runs of exact silence (the inserted pauses) in seconds."""
    silent = np.concatenate([[False], samples == 0.0, [False]])
    edges = np.flatnonzero(np.diff(silent.astype(np.int8)))
    runs = (edges[1::2] - edges[::2]) / PROTOCOL_RATE
    return [float(r) for r in runs if r >= 0.1]


def test_quietest_finds_the_gap_between_words() -> None:
    frame = PROTOCOL_RATE // 100
    loud = np.ones(PROTOCOL_RATE, dtype=np.float32)
    loud[12_000:12_480] = 0.0  # 20 ms of silence
    cut = turns._quietest(loud, 11_000, frame, PROTOCOL_RATE * 15 // 100)
    assert 12_000 - frame < cut <= 12_480 - frame


def test_each_tts_utterance_holds_pauses_of_0_6_to_1_5_s() -> None:
    utterances = turns._utterances(quick=True, seed=0)
    names = [name for name, _, _ in utterances]
    assert names == ["jfk", "piper-1", "piper-2", "piper-3", "espeak-1", "espeak-2", "espeak-3"]
    for name, kind, samples in utterances[1:]:
        pauses = _pauses_s(samples)
        parts = len(PAUSED_SENTENCES[int(name.split("-")[1]) - 1])
        assert kind == "tts" and len(pauses) == parts - 1, (name, pauses)
        assert all(0.6 <= p <= 1.5 + 0.02 for p in pauses), (name, pauses)


@pytest.mark.timeout(900)
def test_quick_run_ends_every_turn_and_every_echoed_answer() -> None:
    args = build_parser().parse_args(
        ["bench", "turns", "--quick", "--modes", "server_vad,semantic_high", "--echo", "1"]
    )
    result = turns.run(args)
    for mode in ("server_vad", "semantic_high"):
        cutoffs = result["cutoffs"][mode]
        assert cutoffs["utterances"] == 7 and cutoffs["never_ended"] == 0, cutoffs["rows"]
        assert all(row["turns"] >= 1 for row in cutoffs["rows"])
    for level in ("minus_30_db", "minus_20_db"):
        echo = result["echo"][level]
        assert echo["answers"] == 1
        assert echo["rows"][0]["status"] in ("completed", "incomplete", "cancelled"), echo["rows"]
    assert result["server"]["exit_code"] == 0
