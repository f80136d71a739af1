"""`r1voice bench answers`: the scorer's verdicts on a table of answers (normalisation,
number words, Chinese numerals, full-width forms, near-misses that must not count), the
question set's shape, and a quick run's JSON shape against a real `r1voice serve` with
SmolLM2. Accuracy and timings are the bench's report, never asserted here."""

from __future__ import annotations

import json

import pytest

from app.cli import build_parser, main
from bench.answers import answers
from bench.answers.questions import KINDS, QUESTIONS, QUICK
from bench.answers.score import answer_length, in_language, match, normalize
from bench.kit.models import choose_models

# (answer, accepted alternatives, keywords?, accepted?)
VERDICTS = [
    ("The capital of France is Paris.", ("Paris",), False, True),
    ("PARIS!", ("paris",), False, True),
    ("It's Parisian cuisine you mean?", ("Paris",), False, False),  # a longer word
    ("Two plus two is four.", ("4",), False, True),
    ("2 + 2 = 4", ("four",), False, True),
    ("The answer is 14.", ("4",), False, False),  # "4" inside "14"
    ("About 4.5 of them.", ("4",), False, False),  # nor inside a decimal
    ("It boils at about 100.0 degrees.", ("100",), False, True),  # the same number
    ("It weighs 2.50 kg.", ("2.5",), False, True),
    ("It boils at 100.5 degrees.", ("100",), False, False),
    ("Seven times eight is fifty-six.", ("56",), False, True),
    ("fifty six", ("fifty-six",), False, True),
    ("It is five hundred and sixty.", ("56",), False, False),
    ("One hundred minus thirty-five is sixty-five.", ("65",), False, True),
    ("There are one thousand grams in a kilogram.", ("1000",), False, True),
    ("A kilogram has 1,000 grams.", ("1000",), False, True),
    ("There are three hundred and sixty-six days.", ("366",), False, True),
    ("一周有七天。", ("7",), False, True),
    ("一年有十二个月", ("12",), False, True),
    ("一年有十二个月", ("十二",), False, True),
    ("一公里等于一千米", ("1000",), False, True),
    ("一百减去四十等于六十", ("60",), False, True),
    ("答案是：８", ("八",), False, True),  # full-width digit and colon
    ("答案是１８。", ("8",), False, False),  # "8" inside "18"
    ("二十除以四等于五", ("5",), False, True),
    ("二十除以四", ("5",), False, False),  # the question repeated is no answer
    ("法国的首都是巴黎。", ("巴黎",), False, True),
    ("法国的首都是伦敦。", ("巴黎",), False, False),
    ("ＰＡＲＩＳ，ｆｒａｎｃｅ", ("Paris",), False, True),  # full-width letters and comma
    ("水的化学式是H₂O。", ("H2O",), False, True),
    ("CO₂, carbon dioxide", ("co2",), False, True),
    ("Boiling water for ten minutes.", ("boil",), True, True),  # keywords: a word start
    ("Boiling water for ten minutes.", ("boil",), False, False),  # answers: whole words
    ("I'd rather not say.", ("water", "minute"), True, False),
    ("Put it in cold water.", ("cool", "cold"), True, True),
    ("Just relax.", ("lean forward",), True, False),
    ("Lean  forward, and pinch.", ("lean forward",), True, True),
    ("多休息，多喝水。", ("休息", "喝水"), True, True),
    ("Twenty-four hours.", ("24",), False, True),
    ("Twenty hours and four minutes.", ("24",), False, False),
    ("", ("Paris",), False, False),
    # a known limitation: negation is not understood
    ("It is not Paris.", ("Paris",), False, True),
]


@pytest.mark.parametrize(("answer", "accepted", "keywords", "expected"), VERDICTS)
def test_verdicts(answer: str, accepted: tuple[str, ...], keywords: bool, expected: bool) -> None:
    assert (match(answer, accepted, keywords) is not None) is expected


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("Twenty-four", "24"),
        ("one hundred and five", "105"),
        ("two thousand three hundred and forty-five", "2345"),
        ("one two three", "1 2 3"),
        ("It is 1,000 grams.", "it is 1000 grams"),
        ("3.5 kg.", "3.5 kg"),
        ("100.0 and 2.50 and 10.05", "100 and 2.5 and 10.05"),
        ("二〇二四年", "2024年"),
        ("三万五千", "35000"),
        ("两千零五", "2005"),
        ("十", "10"),
        ("答案是：４。", "答案是4"),
        ("7 天", "7天"),
    ],
)
def test_normalize(text: str, normal: str) -> None:
    assert normalize(text) == normal


def test_match_names_the_alternative_found() -> None:
    assert match("Leonardo da Vinci painted it.", ("Michelangelo", "da Vinci")) == "da Vinci"


def test_lengths_and_language() -> None:
    assert answer_length("The capital of France is Paris.", "en") == 6
    assert answer_length("法国的首都是巴黎。", "zh") == 8
    assert in_language("巴黎。", "zh") and not in_language("Paris.", "zh")
    assert in_language("Paris.", "en") and not in_language("巴黎", "en")


def test_question_set() -> None:
    ids = [q.id for q in QUESTIONS]
    assert len(ids) == len(set(ids)) and len(ids) >= 60
    assert sum(q.lang == "zh" for q in QUESTIONS) >= 20
    assert {q.kind for q in QUESTIONS} == set(KINDS)
    assert set(QUICK) <= set(ids)
    for q in QUESTIONS:
        assert q.accepted and all(normalize(a) for a in q.accepted), q.id
        # the question alone is never an accepted answer
        assert match(q.text, q.accepted, q.keywords) is None, q.id


def test_unknown_or_unprepared_models_are_refused() -> None:
    with pytest.raises(SystemExit, match="not a bundled LLM"):
        choose_models("no-such-model")


@pytest.mark.timeout(900)
def test_quick_run_reports_each_field(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    model = "smollm2-135m-instruct"
    argv = ["bench", "answers", "--quick", "--models", model, "--per-language", "1"]
    parsed = build_parser().parse_args(argv)
    assert [q.lang for q in answers.choose_questions(parsed.quick, parsed.per_language)] == [
        "en",
        "zh",
    ]
    path = tmp_path / "answers.json"
    assert main([*argv, "--max-tokens", "16", "--json", str(path)]) == 0
    result = json.loads(path.read_text())
    assert result["benchmark"] == "answers" and result["quick"] is True
    assert result["models"] == [model] and result["questions"] == {"en": 1, "zh": 1}
    assert {"cpu_model", "cpu_flags", "cpu_count"} <= set(result["machine"])
    assert result["instructions"] and result["max_tokens"] == 16
    report = result["results"][model]
    assert report["instructions_are_default"] is True
    assert report["server"]["exit_code"] == 0
    for lang in ("en", "zh"):
        figures = report["languages"][lang]
        assert figures["questions"] == 1
        for key in ("accuracy", "correct", "ttft_p50_s", "ttft_p95_s", "length_mean"):
            assert key in figures, key
        assert {"length_p50", "length_unit", "in_language_share", "wrong"} <= set(figures)
    for row in report["questions"]:
        assert {"id", "question", "answer", "accepted", "matched", "ttft_s", "length"} <= set(row)
        assert isinstance(row["accepted"], bool) and row["answer"]
    table = capsys.readouterr().out
    assert model in table and "TTFT P50" in table  # the table, and no JSON, on stdout
    assert not table.lstrip().startswith("{")
