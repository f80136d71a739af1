"""`bench answers --voice-delegation`'s figures from its turns: the shares of each kind of
session, the models alone over voice, and the accuracy target judged against the backend
model alone over voice (the same ears), with the gap to it as text beside it. The turns
are as bench/answers/spoken.py's `ask` returns them, each scored by `_verdicts`; the
spoken run itself needs two servers for minutes and is the bench's, not a test's."""

from __future__ import annotations

from typing import Any

from bench.answers.questions import QUESTIONS
from bench.answers.voice_delegation import (
    _verdicts,
    format_table,
    judge,
    summarize,
    summarize_alone,
)

EN = {q.id: q for q in QUESTIONS if q.lang == "en"}


def turn(qid: str, heard: str, own: str, conclusion: str | None, first_ms: float) -> dict:
    said: dict[str, Any] = {
        "heard": heard,
        "own_answer": own,
        "delegated": conclusion is not None,
        "conclusion": conclusion,
        "delegated_answer": conclusion or "",
        "first_word_ms": first_ms,
        "delegated_answer_ms": None if conclusion is None else first_ms + 3000,
        "status": "completed",
    }
    return said | _verdicts(EN[qid], said)


ROWS = [  # (question, plain session's turn, delegating session's turn)
    {
        "id": "en-capital-france",
        "plain": turn("en-capital-france", "What is the capital of France?", "Paris.", None, 900),
        "delegating": turn(
            "en-capital-france", "What is the capital of France?", "It is Lyon.",
            "The capital of France is Paris.", 1000,
        ),
    },
    {
        "id": "en-red-planet",
        "plain": turn("en-red-planet", "which planet is red", "Venus.", None, 800),
        "delegating": turn(
            "en-red-planet", "which planet is red", "Mars.", "Mercury is the red planet.", 1200
        ),
    },
    {
        "id": "en-romeo",
        "plain": turn("en-romeo", "who wrote romeo in juliet", "Shakespeare did.", None, 1000),
        "delegating": turn("en-romeo", "who wrote romeo in juliet", "Shakespeare.", None, 1100),
    },
    {
        "id": "en-gold-symbol",
        "plain": turn("en-gold-symbol", "the symbol for gold", "It is Ag.", None, 700),
        "delegating": turn(
            "en-gold-symbol", "the symbol for gold", "Ag.", "The symbol for gold is Au.", 900
        ),
    },
]  # fmt: skip


def test_a_route_counts_the_answer_the_user_ends_up_with() -> None:
    s = summarize(ROWS)
    assert s["questions"] == 4 and s["delegated_share"] == 0.75
    # the delegated answer where there is one (Paris, Mercury, Au), else the own (Romeo)
    assert s["accuracy"] == 0.75 and s["wrong"] == ["en-red-planet"]
    assert s["own_words_accuracy"] == 0.5  # Mars, Shakespeare
    assert s["conclusion_accuracy"] == round(2 / 3, 4)  # of the three delegated
    assert s["plain_accuracy"] == 0.5  # Paris, Shakespeare
    assert s["timeouts"] == 0


def test_a_model_alone_over_voice_is_its_plain_sessions() -> None:
    alone = summarize_alone([{"id": r["id"], "plain": r["plain"]} for r in ROWS])
    assert alone["accuracy"] == 0.5 and alone["wrong"] == ["en-red-planet", "en-gold-symbol"]
    assert alone["questions"] == 4 and alone["timeouts"] == 0


def test_the_target_is_judged_against_the_backend_alone_over_voice() -> None:
    s = summarize(ROWS)
    judge(s, backend_text=1.0, backend_voice=0.75)
    assert s["points_below_backend"] == 25.0  # as text: not the same ears
    assert s["points_below_backend_voice"] == 0.0
    assert s["accuracy_target_met"] is True
    judge(s, backend_text=1.0, backend_voice=0.8)  # 5 points: more than 3
    assert s["accuracy_target_met"] is False
    judge(s, backend_text=1.0, backend_voice=None)  # no voice baseline: no verdict
    assert s["accuracy_target_met"] is None
    # first words: delegating P95 against the plain sessions' P95
    assert s["first_word_target_met"] is False


def test_the_table_names_each_accuracy_and_each_miss_with_what_was_heard() -> None:
    backend, fast = "qwen2.5-coder-1.5b-instruct", "smollm2-135m-instruct"
    route = {"summary": summarize(ROWS), "rows": ROWS}
    judge(route["summary"], 1.0, 0.75)
    plain = [{"id": r["id"], "plain": r["plain"]} for r in ROWS]
    result = {
        "backend_model": backend,
        "alone": {fast: {"accuracy": 0.6}, backend: {"accuracy": 1.0}},
        "voice_alone": {
            backend: {"summary": summarize_alone(plain[:2]), "rows": plain[:2]},
            fast: {"summary": summarize_alone(plain)},
        },
        "routes": {"questions": route},
    }
    table = format_table(result).splitlines()
    assert table[1].split() == [fast, "0.6", "0.5"]
    assert table[2].split() == [backend, "1.0", "0.5"]
    assert "en-red-planet" in table[3] and "'which planet is red'" in table[3]  # its miss
    (row,) = [line for line in table if line.startswith("questions ")]
    assert row.split()[1:6] == ["0.75", "0.75", "0.5", "0.6667", "0.5"]
    assert row.rstrip().endswith("0.0 (25.0)")
    (miss,) = [line for line in table[table.index(row) :] if "heard" in line]
    assert "en-red-planet" in miss and "Mercury" in miss
