"""The voice benchmark's pure helpers: WER, percentiles, summaries, silence trimming.

The benchmark itself (a real server and real-time clients) is far too slow for the
test suite; run it with `r1voice bench voice --quick`. No timing is asserted here.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from app.cli import BENCHMARKS, build_parser
from bench import voice
from bench.voice import stats, workload


def test_normalize_ignores_case_punctuation_and_apostrophes() -> None:
    assert stats.normalize_words("Ask not -- what YOUR country can do, for you!") == [
        "ask",
        "not",
        "what",
        "your",
        "country",
        "can",
        "do",
        "for",
        "you",
    ]
    assert stats.normalize_words("Don't stop; it's fine.") == ["dont", "stop", "its", "fine"]
    assert stats.normalize_words("  ...  ") == []


@pytest.mark.parametrize(
    ("reference", "hypothesis", "errors"),
    [
        ("北京是中国的首都。", "北京是中国的首都", (0, 8)),  # characters, punctuation ignored
        ("北京是中国的首都。", "北京是中國的首都", (1, 8)),  # one character wrong
        ("我想去 Paris 看看", "我想去巴黎看看", (2, 6)),  # Paris -> 巴黎: one sub, one insert
        ("你好，世界", "你好 世界", (0, 4)),
    ],
)
def test_word_errors_of_chinese_count_characters(
    reference: str, hypothesis: str, errors: tuple[int, int]
) -> None:
    assert stats.word_errors(reference, hypothesis) == errors


def test_edit_distance_counts_substitutions_deletions_insertions() -> None:
    assert stats.edit_distance([], []) == 0
    assert stats.edit_distance(["a", "b", "c"], ["a", "b", "c"]) == 0
    assert stats.edit_distance(["a", "b", "c"], ["a", "x", "c"]) == 1  # substitution
    assert stats.edit_distance(["a", "b", "c"], ["a", "c"]) == 1  # deletion
    assert stats.edit_distance(["a", "b", "c"], ["a", "b", "x", "c"]) == 1  # insertion
    assert stats.edit_distance(["a", "b"], []) == 2
    assert stats.edit_distance([], ["a", "b", "c"]) == 3
    assert stats.edit_distance(["kitten"], ["sitting"]) == 1  # words, not letters


def test_word_error_rate_on_known_strings() -> None:
    ref = "And so my fellow Americans, ask not what your country can do for you."
    # Case and punctuation do not count.
    assert (
        stats.word_error_rate(
            ref, "and so my fellow americans ask not what your country can do for you"
        )
        == 0.0
    )
    # One substitution in 14 reference words.
    assert stats.word_error_rate(
        ref, "And so my fellow Americans, ask not what the country can do for you."
    ) == pytest.approx(1 / 14)
    # Two deletions ("so", "my") and one insertion ("please") over 14 words.
    assert stats.word_error_rate(
        ref, "And fellow Americans ask not what your country can do for you please"
    ) == pytest.approx(3 / 14)
    assert stats.word_error_rate(
        "How many legs does a spider have?", "How many legs does the spider have?"
    ) == pytest.approx(1 / 7)
    # Nothing recognised: every word deleted.
    assert stats.word_error_rate("one two three", "") == 1.0
    # Insertions can push WER above 1.
    assert stats.word_error_rate("yes", "yes yes yes") == 2.0
    assert stats.word_errors("What is the capital of France?", "what is capital of paris") == (2, 6)


def test_word_error_rate_needs_a_reference() -> None:
    with pytest.raises(ValueError, match="reference"):
        stats.word_error_rate(" ,. ", "anything")


def test_percentile_interpolates_linearly_like_numpy() -> None:
    assert stats.percentile([], 50) is None
    assert stats.percentile([7.0], 50) == 7.0
    assert stats.percentile([7.0], 95) == 7.0
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile([4, 1, 3, 2], 50) == 2.5  # order does not matter
    assert stats.percentile([1, 2, 3, 4], 0) == 1
    assert stats.percentile([1, 2, 3, 4], 100) == 4
    assert stats.percentile([10, 20, 30, 40, 50], 95) == pytest.approx(48.0)
    assert stats.percentile(range(1, 101), 95) == pytest.approx(95.05)
    data = [3.1, 0.4, 9.9, 5.0, 5.0, 12.5, 1.2]
    for q in (5, 25, 50, 75, 90, 95, 99):
        assert stats.percentile(data, q) == pytest.approx(float(np.percentile(data, q)))
    with pytest.raises(ValueError):
        stats.percentile([1, 2], 101)


def test_summarize_skips_missing_values() -> None:
    s = stats.summarize([100.0, None, 300.0, 200.0, None, 400.0])
    assert s == {"n": 4, "mean": 250.0, "p50": 250.0, "p95": 385.0, "min": 100.0, "max": 400.0}
    assert stats.summarize([None]) == {
        "n": 0,
        "mean": None,
        "p50": None,
        "p95": None,
        "min": None,
        "max": None,
    }


def test_trim_silence_keeps_the_speech_and_a_little_padding() -> None:
    rate = 1000
    quiet = np.full(500, 0.001, np.float32)  # room noise, -52 dB under the speech
    loud = np.full(300, 0.4, np.float32)
    clip = np.concatenate([quiet, loud, quiet])
    trimmed = workload.trim_silence(clip, rate, pad_ms=30)
    assert trimmed.size == 300 + 2 * 30
    assert float(trimmed.max()) == pytest.approx(0.4)
    assert trimmed[-31] == pytest.approx(0.4)  # the last loud sample, then the padding
    assert workload.trim_silence(np.zeros(3, np.float32), rate).size == 3  # shorter than a frame


def test_registered_in_the_cli_with_quick_and_json() -> None:
    assert BENCHMARKS["voice"] == "bench.voice"
    args = build_parser().parse_args(
        ["bench", "voice", "--quick", "--json", "out.json", "--llm-backend", "transformers"]
    )
    assert isinstance(args, argparse.Namespace)
    assert (args.what, args.quick, args.json, args.llm_backend) == (
        "voice",
        True,
        "out.json",
        "transformers",
    )
    assert args.sessions == "1,4"
    assert voice.__doc__ is not None and voice.__doc__.splitlines()[0].strip()
